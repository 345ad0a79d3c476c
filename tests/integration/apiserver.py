"""A Kubernetes API emulator for integration tests: kmock's KubernetesEmulator plus what it lacks.

From ``../shared/reference/testing-with-kmock.md`` §6 (checked against kmock 0.8): resourceVersions,
uid and creationTimestamp on create, ``metadata.namespace`` from the URL, PUT, the
``pods/{name}/binding`` subresource (sets ``spec.nodeName`` and ``PodScheduled=True``, answers
201 with a ``Status``, 409 when already bound or gated), ``/status`` patches that apply only
``.status``, equality label/field selectors, watches that resume from a resourceVersion, and an
in-stream ``ERROR`` 410 for a resourceVersion older than the last :meth:`ApiServer.compact`.
Injected error reactions pre-empt writes (they do not mutate the stored object). DELETE honours
``DeleteOptions.preconditions`` (uid, resourceVersion: 409 Conflict when they no longer match).

Validation (issue 9): creates are checked like a real server's (``apivalidation.py``): every
``metadata.name`` and ``generateName`` against the kind's name rule (a DNS subdomain for all our
kinds), names generated like the server's (``prefix[:58]`` + 5 random characters), and
``events.k8s.io/v1`` Event bodies on create and on every PATCH/PUT. A rejected write answers the
real server's ``422 Invalid`` Status (``details.causes`` per field) and stores nothing; an
undecodable time answers 400 ``BadRequest``. Custom resources (``crds.py``: scheduler-plugins' PodGroup) are
pruned and validated against their CRD's schema on every write: unknown fields dropped and recorded in
``warnings`` (the real server's ``Warning`` header), wrong values a 422.

Paths of the ``namespaces`` resource itself (``/api/v1/namespaces``, ``/api/v1/namespaces/{name}``):
kmock 0.8's ``parse_path`` reads the segment after ``namespaces`` as a namespace and fails on the
list (500 ``ValueError``); :func:`_parse_path` reads them as the cluster-scoped resource, as the
real server routes them, and hands every other path to kmock's parser. Discovery of the core group
(``/api/v1``) names its ``groupVersion`` ``v1``, as the real server does (kmock 0.8: ``/v1``).
"""

# ruff: noqa
# mypy: ignore-errors
import copy, datetime, functools, uuid
import attrs, kmock
from kmock import KubernetesError, KubernetesObjectNotFoundError, KubernetesResourceNotFoundError
from kmock._internal import parsing as _kmock_parsing
from tests.integration import apivalidation as av, crds
_kmock_parse_path = _kmock_parsing.parse_path
def _parse_path(path):  # the namespaces resource's own paths; everything else as kmock parses it
    parts = path.strip('/').split('/')
    if parts[:3] == ['api', 'v1', 'namespaces'] and len(parts) <= 4:
        return _kmock_parsing.ParsedPath('', 'v1', 'namespaces', None, parts[3] if len(parts) == 4 else None, None)
    return _kmock_parse_path(path)
_kmock_parsing.parse_path = _parse_path
def _now(): return datetime.datetime.now(datetime.UTC).strftime('%Y-%m-%dT%H:%M:%SZ')
def _conflict(msg): return KubernetesError(status=409, reason='Conflict', message=msg)
def _status(code, **kw): return {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {}, 'code': code, **kw}
def _selected(params, obj):  # equality-based only: k=v, k==v, k!=v; fields as dotted paths
    for sel, is_label in ((params.get('labelSelector', ''), True), (params.get('fieldSelector', ''), False)):
        for term in filter(None, sel.split(',')):
            key, _, val = term.replace('!=', '=').replace('==', '=').partition('=')
            have = ((obj.get('metadata', {}).get('labels') or {}).get(key) if is_label else
                    functools.reduce(lambda o, p: o.get(p) if isinstance(o, dict) else None, key.split('.'), obj))
            if (str('' if have is None else have) == val) == ('!=' in term): return False
    return True
@attrs.define(kw_only=True)
class ApiServer(kmock.KubernetesEmulator):
    rv: int = 0
    compacted_rv: int = 0
    log: list = attrs.field(factory=list)   # (rv, resource, event): lets watches resume from an RV
    warnings: list = attrs.field(factory=list)   # fieldValidation=Warn warnings sent (unknown CRD fields pruned)
    def __attrs_post_init__(self):
        super().__attrs_post_init__()       # stock fallbacks call our overridden _serve_* methods
        self.fallback[kmock.method.PUT] << self._serve_put
        self.fallback['post', kmock.subresource('binding')] << self._serve_binding
    async def _handle(self, request):       # skip the stock mutate-before-dispatch step: all writes
        return await kmock.RawHandler._handle(self, request)   # are fallbacks; reactions pre-empt them
    def compact(self):                      # watches resuming from any RV seen so far get ERROR 410
        self.rv += 1; self.compacted_rv, self.log = self.rv, []
    def _obj(self, req):
        key = (req.resource, req.namespace, req.name)
        if key not in self._objects or self._objects[key].deleted: raise KubernetesObjectNotFoundError()
        cur = copy.deepcopy(self._objects[key].raw); cur.setdefault('metadata', {})
        return key, cur
    async def _commit(self, key, body, type_):
        self.rv += 1; body['metadata']['resourceVersion'] = str(self.rv)
        if key in self._objects: self._objects[key].create(body)   # appends a history version
        else: self._objects[key] = body
        if type_ == 'DELETED': self._objects[key].delete()
        event = {'type': type_, 'object': copy.deepcopy(body)}
        self.log.append((self.rv, key[0], event)); await self._buses[key[0]].put(event)
        return body
    async def _serve_create(self, req):
        body = copy.deepcopy(req.data); md = body.setdefault('metadata', {})
        if req.namespace: md['namespace'] = req.namespace
        if not md.get('name') and md.get('generateName'): md['name'] = av.generate_name(md['generateName'])
        self._validate(req, body, None)
        key = (req.resource, md.get('namespace'), md['name'])
        async with self._lock:
            if key in self._objects and not self._objects[key].deleted: raise _conflict(f"{md['name']} exists")
            md.update(uid=str(uuid.uuid4()), creationTimestamp=_now(), generation=1)
            return kmock.Response(status=201, payload=await self._commit(key, body, 'ADDED'))
    async def _write(self, req, new_of):    # PATCH & PUT: RV precondition, keep identity fields
        async with self._lock:
            key, cur = self._obj(req); cm = cur['metadata']
            new = new_of(cur); md = new.setdefault('metadata', {})
            if md.get('resourceVersion') not in (None, cm.get('resourceVersion')):
                raise _conflict('the object has been modified; please apply your changes to the latest version')
            md.update({k: cm[k] for k in ('uid', 'name', 'namespace', 'creationTimestamp', 'generation') if k in cm})
            self._validate(req, new, cur)
            gone = md.get('deletionTimestamp') and not md.get('finalizers')
            return await self._commit(key, new, 'DELETED' if gone else 'MODIFIED')
    async def _serve_update(self, req):     # PATCH: dict = merge patch (lists replaced), list = JSON patch
        patch = req.data if req.subresource != 'status' or not isinstance(req.data, dict) else \
            {'status': req.data.get('status'), 'metadata': req.data.get('metadata', {})}   # /status: .status only
        def apply(cur): obj = kmock.Object(cur); obj.patch(patch); return copy.deepcopy(obj.raw)
        return await self._write(req, apply)
    async def _serve_put(self, req):        # replace (PUT .../status is not special-cased)
        return await self._write(req, lambda cur: copy.deepcopy(req.data))
    async def _serve_delete(self, req):
        async with self._lock:
            key, cur = self._obj(req); md = cur['metadata']
            pre = (req.data.get('preconditions') or {}) if isinstance(req.data, dict) else {}
            if pre.get('uid') and pre['uid'] != md.get('uid'):  # DeleteOptions.preconditions, as the server checks
                raise _conflict(f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: {md.get('uid')}")
            if pre.get('resourceVersion') and pre['resourceVersion'] != md.get('resourceVersion'):
                raise _conflict(f"Precondition failed: ResourceVersion in precondition: {pre['resourceVersion']}, "
                                f"ResourceVersion in object meta: {md.get('resourceVersion')}")
            if not md.get('finalizers'): return await self._commit(key, cur, 'DELETED')
            if md.get('deletionTimestamp'): return cur
            md['deletionTimestamp'] = _now()  # soft delete; gone once the finalizers are patched away
            return await self._commit(key, cur, 'MODIFIED')
    async def _serve_binding(self, req):    # POST /api/v1/namespaces/{ns}/pods/{name}/binding
        async with self._lock:
            key, pod = self._obj(req); spec = pod.setdefault('spec', {})
            if spec.get('nodeName'): raise _conflict(f"pod {req.name} is already assigned to node {spec['nodeName']}")
            if spec.get('schedulingGates'): raise _conflict(f"pod {req.name} has non-empty .spec.schedulingGates")
            spec['nodeName'] = req.data['target']['name']
            conds = [c for c in pod.setdefault('status', {}).get('conditions', []) if c.get('type') != 'PodScheduled']
            pod['status']['conditions'] = conds + [{'type': 'PodScheduled', 'status': 'True'}]
            await self._commit(key, pod, 'MODIFIED')
        return kmock.Response(status=201, payload=_status(201, status='Success'))
    def _validate(self, req, body, old):    # create (old None) or update: raise the real server's 422 / 400
        r, md = req.resource, body.get('metadata') or {}
        events = (r.group, r.version, r.plural) == av.EVENTS_V1
        if events and (bad := av.bad_times(body)):
            raise KubernetesError(status=400, reason='BadRequest', message='; '.join(bad))
        if events: errs = av.validate_event_create(body) if old is None else av.validate_event_update(body, old)
        elif old is None: errs = av.validate_metadata(md, av.name_rule(r.group, r.version, r.plural, self._kind(r)))
        else: errs = []                     # names are immutable; other kinds' fields are not schema-checked
        if (schema := crds.SCHEMAS.get((r.group, r.version, r.plural))) is not None:   # custom resources
            self.warnings += [f"{r.plural}.{r.group} {md.get('name')}: {w}" for w in crds.prune(body, schema)]
            errs += crds.validate(body, schema)
        if not events: errs += av.validate_annotations(md)
        if errs:
            status = av.invalid_status(r.group, self._kind(r), md.get('name') or '', errs)
            raise KubernetesError(status=422, reason='Invalid', message=status['message'], details=status['details'])
    async def _serve_version(self, req):    # /api/v1's groupVersion is "v1" (kmock 0.8 says "/v1"; client-go's
        out = await super()._serve_version(req)   # RESTMapper keys resource lists by it: Helm maps no core kind)
        out['groupVersion'] = out['groupVersion'].lstrip('/'); return out
    def _kind(self, res):
        return self._resources[res].kind if res in self._resources else res.plural
    def _live(self, res): return [o for (r, _, _), o in self._objects.items() if r == res and not o.deleted]
    def _matches(self, req, body):
        return req.namespace in (None, body.get('metadata', {}).get('namespace')) and _selected(req.params, body)
    async def _serve_list(self, req):
        if req.resource not in self._get_resources(): raise KubernetesResourceNotFoundError()
        async with self._lock:
            items = [copy.deepcopy(o.raw) for o in self._live(req.resource) if self._matches(req, o.raw)]
            return {'kind': f'{self._resources[req.resource].kind}List', 'items': items,
                    'apiVersion': f'{req.resource.group}/{req.resource.version}'.lstrip('/'),
                    'metadata': {'resourceVersion': str(self.rv)}}
    async def _serve_watch(self, req):
        yield b''                            # flush the headers
        since, bus = req.params.get('resourceVersion', '0'), self._buses[req.resource]
        since = int(since) if since.isdigit() else 0
        async with self._lock:               # backlog + bus mark taken atomically: no gaps, no dups
            mark = await bus.mark()
            if 0 < since < self.compacted_rv:
                backlog = [{'type': 'ERROR', 'object': _status(410, status='Failure', reason='Expired',
                                                               message=f'too old resource version: {since}')}]
            elif since:
                backlog = [e for rv, r, e in self.log if r == req.resource and rv > since]
            else:                            # no RV or "0": the current state as ADDED
                backlog = [{'type': 'ADDED', 'object': copy.deepcopy(o.raw)} for o in self._live(req.resource)]
        try:
            for event in backlog:
                if event['type'] == 'ERROR': yield event; return
                if self._matches(req, event['object']): yield event
            async for event in bus.stream(since=mark):
                if self._matches(req, event['object']): yield event
        finally:
            await bus.unmark(mark)
