"""Dynamic Resource Allocation (``resource.k8s.io/v1``): choosing devices from ResourceSlices for claims.

``cel`` evaluates DeviceClass and request selectors (CEL expressions) against one device at a time.
"""
