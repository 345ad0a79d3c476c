"""The webhook server's self-signed certificate (kopf's ``build_certificate`` contract, made with cryptography)."""

from __future__ import annotations

import ipaddress
import ssl
import tempfile

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from scheduler.operator.certificates import ServiceWebhookServer


def test_certificate_names_every_host_and_is_its_own_ca() -> None:
    cert_pem, key_pem = ServiceWebhookServer.build_certificate(
        ["op.ns.svc", "0.0.0.0", "127.0.0.1", "op.ns.svc", "::1"])
    cert = x509.load_pem_x509_certificate(cert_pem)
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "op.ns.svc"
    assert cert.issuer == cert.subject
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["op.ns.svc"]
    assert sans.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1")]
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert ExtendedKeyUsageOID.SERVER_AUTH in usage
    # the pair loads into a server context, and a client trusting the certificate verifies it
    with tempfile.NamedTemporaryFile() as certf, tempfile.NamedTemporaryFile() as keyf:
        certf.write(cert_pem)
        keyf.write(key_pem)
        certf.flush()
        keyf.flush()
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(certf.name, keyf.name)
    ssl.create_default_context(cadata=cert_pem.decode())


def test_only_ips_use_the_first_ip_as_common_name_and_a_password_encrypts_the_key() -> None:
    cert_pem, key_pem = ServiceWebhookServer.build_certificate(["127.0.0.1"], password="s3cret")
    cert = x509.load_pem_x509_certificate(cert_pem)
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "127.0.0.1"
    with pytest.raises(TypeError):
        serialization.load_pem_private_key(key_pem, password=None)
    serialization.load_pem_private_key(key_pem, password=b"s3cret")


def test_no_usable_host_is_an_error() -> None:
    with pytest.raises(ValueError, match="no usable hostname"):
        ServiceWebhookServer.build_certificate(["0.0.0.0", "::"])
