"""The webhook server: kopf's :class:`kopf.WebhookServer`, with its self-signed certificate made by
``cryptography`` and, in a cluster, a Service reference for the API server to call.

kopf builds self-signed certificates with ``certbuilder``/``oscrypto``; the released oscrypto
(1.3.0) cannot load OpenSSL ≥ 3.0.10 ("Error detecting the version of libcrypto",
wbond/oscrypto#78; kopf's own CI pins an unreleased oscrypto commit for it, nolar/kopf#1139),
which is what current distributions ship. :meth:`ServiceWebhookServer.build_certificate`
replaces only that step, with the same result kopf documents: a CA-capable self-signed
certificate whose first non-IP hostname is the common name and every hostname a SAN (IPs as IP
SANs), RSA 2048, for ``server_auth``/``client_auth``. kopf still does everything else: TLS,
serving, reloading ``certfile``/``pkeyfile`` when they change, and publishing the CA bundle in
the webhook configurations it manages.

kopf reports the webhooks by URL (``https://host:port/<handler id>``). A kube-apiserver cannot
usually resolve a Service's DNS name, so with ``service`` set the client config is a Service
reference instead (``admissionregistration.k8s.io/v1 ServiceReference``); kopf adds the handler id
to its ``path`` as it does to a URL.
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import AsyncIterator, Collection
from typing import Any

import kopf
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = datetime.timedelta(days=3650)
"""A self-signed certificate lives as long as the process that made it; ten years is "never expires"."""


class ServiceWebhookServer(kopf.WebhookServer):
    """:class:`kopf.WebhookServer` (every argument of it), plus ``service``: ``(namespace, name,
    port)`` of the Service in front of this server, reported instead of the URL."""

    def __init__(self, *, service: tuple[str, str, int] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.service = service

    async def __call__(self, fn: kopf.WebhookFn) -> AsyncIterator[kopf.WebhookClientConfig]:
        async for config in super().__call__(fn):
            if self.service is not None:
                namespace, name, port = self.service
                config.pop("url", None)
                config["service"] = {"namespace": namespace, "name": name, "port": port, "path": self.path or ""}
            yield config

    @staticmethod
    def build_certificate(hostnames: Collection[str], password: str | None = None) -> tuple[bytes, bytes]:
        """A self-signed certificate for ``hostnames`` (DNS names or IPs) and its private key, both PEM
        (the key encrypted with ``password`` if given): kopf's ``WebhookServer.build_certificate``
        contract. Unspecified addresses (``0.0.0.0``, ``::``) are left out; raises ``ValueError``
        when no hostname is left."""
        ips: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = []
        names: list[str] = []
        for host in hostnames:
            try:
                ip = ipaddress.ip_address(host)
            except ValueError:
                if host not in names:
                    names.append(host)
                continue
            if not ip.is_unspecified and ip not in ips:
                ips.append(ip)
        if not names and not ips:
            raise ValueError(f"no usable hostname for a certificate among {list(hostnames)}")
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0] if names else str(ips[0]))])
        now = datetime.datetime.now(datetime.UTC)
        sans: list[x509.GeneralName] = [x509.DNSName(n) for n in names] + [x509.IPAddress(ip) for ip in ips]
        cert = (
            x509.CertificateBuilder()
            .subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_encipherment=True, key_cert_sign=True,
                                         crl_sign=True, content_commitment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
                           critical=False)
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .sign(key, hashes.SHA256())
        )
        encryption: serialization.KeySerializationEncryption = (
            serialization.BestAvailableEncryption(password.encode()) if password else serialization.NoEncryption())
        pkey = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)
        return cert.public_bytes(serialization.Encoding.PEM), pkey
