"""A serving CA and certificate derived from a secret seed (pure Python; the `cryptography` package).

Why derived, not generated: the stack must hold a CA whose certificate goes into an APIService's caBundle, and the
same bytes must come out of every `pulumi preview` and `up` of the stack (an update plan is applied only if `up`
computes what the preview did, and a fresh key at each run would replace the Secret at each run). Pulumi has no
"generate once" for a program's own values but a provider's resource (pulumi-random, pulumi-tls; neither is built
here, docs/security.md), so the randomness comes from the cluster: the seed is a token the cluster's token
controller writes into a Secret, which Pulumi keeps in its state (components/kubernetes/metrics_adapter.py).

From the seed: two P-256 keys (HKDF-SHA256, one label each, reduced into the curve's order), serial numbers from the
same derivation, validity from the seed's creation time, and ECDSA signatures by RFC 6979 (deterministic): the same
seed and time give byte-identical PEM. P-256 and SHA-256 because every TLS stack the aggregator and the adapter use
accepts them (Go's crypto/tls and crypto/x509, FIPS builds included).
"""

from __future__ import annotations

import base64
import datetime as dt
from dataclasses import dataclass
from typing import Iterable

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_ORDER = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551  # P-256's group order (SEC 2, 2.4.2)


@dataclass(frozen=True)
class ServingTLS:
    ca_pem: str
    """The CA's certificate: what a client trusts (an APIService's caBundle, base64 of these bytes)."""
    cert_pem: str
    """The server's certificate, signed by the CA, for its DNS names."""
    key_pem: str
    """The server's private key (PKCS#8)."""

    def secret_data(self) -> dict[str, str]:
        """As a kubernetes.io/tls Secret's data (base64): tls.crt, tls.key and ca.crt."""
        return {k: base64.b64encode(v.encode()).decode() for k, v in
                (("tls.crt", self.cert_pem), ("tls.key", self.key_pem), ("ca.crt", self.ca_pem))}


def add_years(when: dt.datetime, years: int) -> dt.datetime:
    """The same day and time `years` later (or earlier); 29 February becomes the 28th in a year without it."""
    try:
        return when.replace(year=when.year + years)
    except ValueError:
        return when.replace(year=when.year + years, day=28)


def _derived(seed: bytes, label: str, length: int) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=length, salt=None, info=f"pathways-serving-tls/{label}".encode()).derive(seed)


def _key(seed: bytes, label: str) -> ec.EllipticCurvePrivateKey:
    # 48 bytes reduced mod n: the bias is below 2^-128 (FIPS 186-5 A.4.1, "extra random bits")
    scalar = int.from_bytes(_derived(seed, label, 48), "big") % (_ORDER - 1) + 1
    return ec.derive_private_key(scalar, ec.SECP256R1())


def _serial(seed: bytes, label: str) -> int:
    # positive, at most 20 octets, with 64 bits or more of entropy (RFC 5280 4.1.2.2; CA/B Forum BR 7.1)
    return int.from_bytes(_derived(seed, f"{label}/serial", 16), "big") >> 1 or 1


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def derive(seed: bytes, issued: dt.datetime, dns_names: Iterable[str], *, years: int, ca_name: str) -> ServingTLS:
    """The CA and the server certificate for `dns_names` (the first is its common name), valid from `issued` for
    `years`; the same arguments give the same bytes."""
    if len(seed) < 32:
        raise ValueError(f"a seed of {len(seed)} bytes is too short to derive keys from (32 at least)")
    names = list(dns_names)
    issued = issued.astimezone(dt.timezone.utc).replace(microsecond=0)
    expires = add_years(issued, years)
    ca_key, server_key = _key(seed, "ca"), _key(seed, "server")
    ca = (x509.CertificateBuilder()
          .subject_name(_name(ca_name)).issuer_name(_name(ca_name))
          .public_key(ca_key.public_key()).serial_number(_serial(seed, "ca"))
          .not_valid_before(issued).not_valid_after(expires)
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                                       key_encipherment=False, data_encipherment=False, key_agreement=False,
                                       encipher_only=False, decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256(), ecdsa_deterministic=True))
    server = (x509.CertificateBuilder()
              .subject_name(_name(names[0])).issuer_name(ca.subject)
              .public_key(server_key.public_key()).serial_number(_serial(seed, "server"))
              .not_valid_before(issued).not_valid_after(expires)
              .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
              .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=False, crl_sign=False, content_commitment=False,
                                           key_encipherment=False, data_encipherment=False, key_agreement=False,
                                           encipher_only=False, decipher_only=False), critical=True)
              .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
              .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in names]), critical=False)
              .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
              .sign(ca_key, hashes.SHA256(), ecdsa_deterministic=True))
    pem = serialization.Encoding.PEM
    return ServingTLS(
        ca_pem=ca.public_bytes(pem).decode(), cert_pem=server.public_bytes(pem).decode(),
        key_pem=server_key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode())


def expires(cert_pem: str) -> dt.datetime:
    """When a PEM certificate stops being valid (UTC)."""
    return x509.load_pem_x509_certificate(cert_pem.encode()).not_valid_after_utc
