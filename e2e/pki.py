"""The certificates and keys of a local cluster, generated fresh for every cluster.

Why generated in Python: the API server must run with real TLS and a real
client certificate so that authentication and RBAC are exercised as in a
production cluster, and ``cryptography`` makes that material in milliseconds
without any external tool. TLS keys are ECDSA P-256 (fast to generate); the
service-account signing key is RSA, the algorithm every Kubernetes client of
tokens accepts.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = datetime.timedelta(days=30)
"""Long enough for any local session; the material is thrown away with the cluster."""

PrivateKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey


@dataclass(frozen=True)
class Pki:
    """Paths of the PEM files the components and clients need."""

    directory: Path

    @property
    def ca_cert(self) -> Path:
        return self.directory / "ca.crt"

    @property
    def ca_key(self) -> Path:
        return self.directory / "ca.key"

    @property
    def serving_cert(self) -> Path:
        return self.directory / "apiserver.crt"

    @property
    def serving_key(self) -> Path:
        return self.directory / "apiserver.key"

    @property
    def admin_cert(self) -> Path:
        return self.directory / "admin.crt"

    @property
    def admin_key(self) -> Path:
        return self.directory / "admin.key"

    @property
    def service_account_key(self) -> Path:
        return self.directory / "sa.key"

    @property
    def service_account_public_key(self) -> Path:
        return self.directory / "sa.pub"

    def server_context(self, *, client_certs: bool = False) -> ssl.SSLContext:
        """A TLS server's context on the API server's certificate; ``client_certs`` requires
        a client certificate of this CA, as the API server verifies one."""
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(str(self.serving_cert), str(self.serving_key))
        if client_certs:
            context.load_verify_locations(self.ca_cert)
            context.verify_mode = ssl.CERT_REQUIRED
        return context


def generate(directory: Path, *, service_ip: str) -> Pki:
    """Write a CA, the API server's serving cert, an admin client cert and the SA key pair.

    ``service_ip`` is the first address of the service range: in-cluster
    clients reach the API server as ``kubernetes.default.svc`` at that IP.
    """
    directory.mkdir(parents=True, exist_ok=True)
    pki = Pki(directory)
    now = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5)

    ca_key = _ec_key()
    ca_name = _name("coscheduler-e2e-ca")
    ca_cert = (
        _builder(ca_name, ca_name, ca_key, now)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(_key_usage(cert_sign=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    _write_pair(pki.ca_cert, pki.ca_key, ca_cert, ca_key)

    dns_names = [
        "localhost",
        "kubernetes",
        "kubernetes.default",
        "kubernetes.default.svc",
        "kubernetes.default.svc.cluster.local",
    ]
    ips = ["127.0.0.1", service_ip]
    san = x509.SubjectAlternativeName(
        [
            *(x509.DNSName(n) for n in dns_names),
            *(x509.IPAddress(ipaddress.ip_address(i)) for i in ips),
        ]
    )
    serving_key = _ec_key()
    serving_cert = (
        _leaf(
            _name("kube-apiserver"),
            serving_key,
            ca_cert,
            ca_key,
            now,
            ExtendedKeyUsageOID.SERVER_AUTH,
        )
        .add_extension(san, critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    _write_pair(pki.serving_cert, pki.serving_key, serving_cert, serving_key)

    admin_key = _ec_key()
    admin_name = _name("coscheduler-e2e-admin", organization="system:masters")
    admin_cert = _leaf(
        admin_name, admin_key, ca_cert, ca_key, now, ExtendedKeyUsageOID.CLIENT_AUTH
    ).sign(ca_key, hashes.SHA256())
    _write_pair(pki.admin_cert, pki.admin_key, admin_cert, admin_key)

    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pki.service_account_key.write_bytes(_private_pem(sa_key))
    pki.service_account_public_key.write_bytes(
        sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    for path in directory.iterdir():
        path.chmod(0o600)
    return pki


@dataclass(frozen=True)
class WebhookCertificates:
    """PEM bytes of a webhook server's CA and serving pair, the four keys of its Secret."""

    ca_cert: bytes
    ca_key: bytes
    cert: bytes
    key: bytes

    def secret_data(self) -> dict[str, bytes]:
        """Under the names cert-controller (and a kubelet mounting the Secret) use."""
        return {
            "ca.crt": self.ca_cert,
            "ca.key": self.ca_key,
            "tls.crt": self.cert,
            "tls.key": self.key,
        }


def webhook_certificates(
    *, ca_name: str, dns_name: str, validity: datetime.timedelta
) -> WebhookCertificates:
    """A CA and a serving certificate for ``dns_name`` and 127.0.0.1, for an operator's webhook.

    Shaped so that cert-controller (which rotates webhook certificates in
    Kubebuilder operators) accepts them instead of replacing them: RSA keys in
    PKCS#1 (it parses the CA key only so), the CA names itself in a DNS SAN (it
    verifies the CA against ``ca_name``), and ``validity`` longer than its
    lookahead (certificates expiring within 90 days are replaced). 127.0.0.1 is
    there because a local API server calls the webhook at a loopback URL.
    """
    now = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5)
    ca_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ca_subject = _name(ca_name)
    ca_cert = (
        _builder(ca_subject, ca_subject, ca_key, now, validity)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(_key_usage(cert_sign=True), critical=True)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(ca_name)]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    san = x509.SubjectAlternativeName(
        [x509.DNSName(dns_name), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    )
    cert = (
        _leaf(_name(dns_name), key, ca_cert, ca_key, now, ExtendedKeyUsageOID.SERVER_AUTH, validity)
        .add_extension(san, critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pkcs1 = serialization.PrivateFormat.TraditionalOpenSSL
    return WebhookCertificates(
        ca_cert=ca_cert.public_bytes(serialization.Encoding.PEM),
        ca_key=_private_pem(ca_key, pkcs1),
        cert=cert.public_bytes(serialization.Encoding.PEM),
        key=_private_pem(key, pkcs1),
    )


def _ec_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _name(common_name: str, *, organization: str | None = None) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        attributes.insert(0, x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(attributes)


def _builder(
    subject: x509.Name,
    issuer: x509.Name,
    key: PrivateKey,
    now: datetime.datetime,
    validity: datetime.timedelta = VALIDITY,
) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + validity)
    )


def _leaf(
    subject: x509.Name,
    key: PrivateKey,
    ca_cert: x509.Certificate,
    ca_key: PrivateKey,
    now: datetime.datetime,
    usage: x509.ObjectIdentifier,
    validity: datetime.timedelta = VALIDITY,
) -> x509.CertificateBuilder:
    authority = x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key())
    return (
        _builder(subject, ca_cert.subject, key, now, validity)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(cert_sign=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(authority, critical=False)
    )


def _key_usage(*, cert_sign: bool) -> x509.KeyUsage:
    """CA: keyCertSign and cRLSign (strict X.509 checks demand them); leaf: digitalSignature."""
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )


def _private_pem(
    key: PrivateKey, form: serialization.PrivateFormat = serialization.PrivateFormat.PKCS8
) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, form, serialization.NoEncryption())


def _write_pair(cert_path: Path, key_path: Path, cert: x509.Certificate, key: PrivateKey) -> None:
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(_private_pem(key))
