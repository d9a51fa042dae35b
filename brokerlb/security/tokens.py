"""JSON Web Tokens as Pulsar's token authentication makes and checks them (PyJWT + cryptography).

Keys are written and read the way ``pulsar tokens`` and ``AuthenticationProviderToken`` do:

* a **secret key** (HS256) is raw bytes: ``create-secret-key`` writes 32 random bytes (or
  their base64 text with ``--base64``);
* a **key pair** (RS256 by default; ES256 and the other RSA/EC algorithms too) is written as
  DER: the private key as PKCS#8, the public key as X.509 SubjectPublicKeyInfo. PEM files
  are read too;
* a key *setting* (``tokenSecretKey``, ``tokenPublicKey``, ``--secret-key`` ...) is
  ``data:;base64,<base64>``, ``file:///path``, ``env:VARIABLE`` (base64 in the variable),
  a path of an existing file, or the base64 of the key itself (Pulsar's ``readKeyFromUrl``).

A token is signed with the subject (the role) in ``sub`` and an optional ``exp``; a token
verifies only with the configured key and an algorithm of that key's family -- an unsigned
token (``alg: none``) or one signed for another algorithm never does.

>>> secret = create_secret_key()
>>> token = create_token(secret_key(secret), "admin")
>>> TokenVerifier(secret_key(secret)).role(token)
'admin'
"""

from __future__ import annotations

import base64
import binascii
import os
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from brokerlb.errors import AuthenticationError, InvalidConfigError

__all__ = [
    "SigningKey",
    "VerificationKey",
    "TokenVerifier",
    "read_key_setting",
    "secret_key",
    "public_key",
    "private_key",
    "create_secret_key",
    "create_key_pair",
    "create_token",
    "parse_duration",
    "HMAC_ALGORITHMS",
    "ASYMMETRIC_ALGORITHMS",
]

#: Algorithms a secret key signs with (jjwt picks by key length; HS256 is what ``pulsar tokens`` uses).
HMAC_ALGORITHMS = ("HS256", "HS384", "HS512")
#: Algorithms of key pairs Pulsar accepts (``tokenPublicAlg``; RS256 is the default).
ASYMMETRIC_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512")


@dataclass(frozen=True)
class SigningKey:
    """A key that signs tokens: a secret (HMAC) or a private key, with its algorithm."""

    key: Any
    algorithm: str


@dataclass(frozen=True)
class VerificationKey:
    """A key that verifies tokens and the algorithms it accepts (one family, never ``none``)."""

    key: Any
    algorithms: tuple[str, ...]


def read_key_setting(setting: str, what: str = "key") -> bytes:
    """The bytes a key setting names (module docstring); :class:`InvalidConfigError` when unreadable."""
    text = setting.strip()
    try:
        if text.startswith("data:"):
            header, sep, payload = text[len("data:") :].partition(",")
            if not sep:
                raise ValueError("a data: URL needs a ',' before its data")
            if header.endswith(";base64"):
                return base64.b64decode(payload, validate=True)
            return unquote(payload).encode("utf-8")
        if text.startswith("env:"):
            value = os.environ.get(text[len("env:") :])
            if value is None:
                raise ValueError(f"the environment variable {text[4:]} is not set")
            return base64.b64decode(value, validate=True)
        if text.startswith("file:"):
            return Path(unquote(urlparse(text).path)).read_bytes()
        if os.path.isfile(text):
            return Path(text).read_bytes()
        return base64.b64decode(text, validate=True)
    except (OSError, ValueError, binascii.Error) as exc:
        raise InvalidConfigError(what, _shown(text), f"cannot read the key: {exc}") from None


def _shown(setting: str) -> str:
    """A key setting as it may appear in an error: file and env names yes, key material no."""
    return setting if setting.startswith(("file:", "env:", "/")) else setting[:12] + "..."


def secret_key(data: bytes, algorithm: str = "HS256") -> SigningKey:
    if algorithm not in HMAC_ALGORITHMS:
        raise InvalidConfigError(
            "algorithm", algorithm, f"a secret key signs with {', '.join(HMAC_ALGORITHMS)}"
        )
    if len(data) < 32:
        raise InvalidConfigError(
            "tokenSecretKey", f"{len(data)} bytes", "a secret key must be at least 32 bytes (256 bits)"
        )
    return SigningKey(data, algorithm)


def _load_private(data: bytes) -> Any:
    from cryptography.hazmat.primitives import serialization

    if data.lstrip().startswith(b"-----BEGIN"):
        return serialization.load_pem_private_key(data, password=None)
    return serialization.load_der_private_key(data, password=None)


def _load_public(data: bytes) -> Any:
    from cryptography.hazmat.primitives import serialization

    if data.lstrip().startswith(b"-----BEGIN"):
        return serialization.load_pem_public_key(data)
    return serialization.load_der_public_key(data)


def _check_family(key: Any, algorithm: str, what: str) -> None:
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

    if algorithm not in ASYMMETRIC_ALGORITHMS:
        raise InvalidConfigError(what, algorithm, f"expected one of {', '.join(ASYMMETRIC_ALGORITHMS)}")
    wants_ec = algorithm.startswith("ES")
    is_ec = isinstance(key, (ec.EllipticCurvePrivateKey, ec.EllipticCurvePublicKey))
    is_rsa = isinstance(key, (rsa.RSAPrivateKey, rsa.RSAPublicKey))
    if (wants_ec and not is_ec) or (not wants_ec and not is_rsa):
        raise InvalidConfigError(what, algorithm, f"the key is not a key for {algorithm}")


def private_key(data: bytes, algorithm: str = "RS256") -> SigningKey:
    try:
        key = _load_private(data)
    except (ValueError, TypeError) as exc:
        raise InvalidConfigError(
            "private key", f"{len(data)} bytes", f"not a PKCS#8 DER or PEM key: {exc}"
        ) from None
    _check_family(key, algorithm, "algorithm")
    return SigningKey(key, algorithm)


def public_key(data: bytes, algorithm: str = "RS256") -> VerificationKey:
    try:
        key = _load_public(data)
    except (ValueError, TypeError) as exc:
        raise InvalidConfigError(
            "tokenPublicKey", f"{len(data)} bytes", f"not an X.509 DER or PEM key: {exc}"
        ) from None
    _check_family(key, algorithm, "tokenPublicAlg")
    return VerificationKey(key, (algorithm,))


def create_secret_key() -> bytes:
    """32 random bytes: an HS256 secret (``pulsar tokens create-secret-key``)."""
    return secrets.token_bytes(32)


def create_key_pair(algorithm: str = "RS256") -> tuple[bytes, bytes]:
    """``(private PKCS#8 DER, public X.509 DER)`` for ``algorithm`` (``pulsar tokens create-key-pair``)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

    if algorithm not in ASYMMETRIC_ALGORITHMS:
        raise InvalidConfigError(
            "--algorithm", algorithm, f"expected one of {', '.join(ASYMMETRIC_ALGORITHMS)}"
        )
    if algorithm.startswith("ES"):
        curve = {"ES256": ec.SECP256R1(), "ES384": ec.SECP384R1(), "ES512": ec.SECP521R1()}[algorithm]
        key: Any = ec.generate_private_key(curve)
    else:
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return private, public


def parse_duration(text: str) -> float:
    """``pulsar tokens create --expiry-time``: a number with ``s``, ``m``, ``h``, ``d``, ``w`` or ``y``."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "y": 365 * 86400}
    value = text.strip()
    unit = value[-1:].lower()
    number = value[:-1] if unit in units else value
    try:
        amount = float(number)
    except ValueError:
        raise InvalidConfigError("--expiry-time", text, "expected a number with s, m, h, d, w or y") from None
    if amount <= 0:
        raise InvalidConfigError("--expiry-time", text, "must be positive")
    return amount * units.get(unit, 1)


def create_token(
    key: SigningKey,
    subject: str,
    *,
    expires_in: float | None = None,
    headers: Mapping[str, Any] | None = None,
    claims: Mapping[str, Any] | None = None,
    now: float | None = None,
) -> str:
    """A signed token for ``subject`` (``pulsar tokens create``)."""
    import jwt

    payload: dict[str, Any] = {"sub": subject, **(claims or {})}
    if expires_in is not None:
        payload["exp"] = int((time.time() if now is None else now) + expires_in)
    return str(jwt.encode(payload, key.key, algorithm=key.algorithm, headers=dict(headers or {}) or None))


@dataclass(frozen=True)
class TokenVerifier:
    """Checks tokens against one key (``AuthenticationProviderToken``'s rules) and names their role.

    ``role_claim`` is ``tokenAuthClaim`` (``sub`` by default; a list claim gives its first
    string, as Pulsar does); ``audience_claim`` / ``audience`` are ``tokenAudienceClaim`` /
    ``tokenAudience``.
    """

    key: SigningKey | VerificationKey
    role_claim: str = "sub"
    audience_claim: str | None = None
    audience: str | None = None
    leeway: float = field(default=0.0)

    @property
    def algorithms(self) -> tuple[str, ...]:
        if isinstance(self.key, VerificationKey):
            return self.key.algorithms
        return HMAC_ALGORITHMS

    def claims(self, token: str) -> dict[str, Any]:
        """The verified claims; :class:`AuthenticationError` when the token does not verify."""
        import jwt

        if not token or not token.strip():
            raise AuthenticationError("Blank token found")
        try:
            claims = jwt.decode(
                token.strip(),
                self.key.key,
                algorithms=list(self.algorithms),
                options={"verify_aud": False, "require": []},
                leeway=self.leeway,
            )
        except jwt.PyJWTError as exc:
            raise AuthenticationError(f"Failed to authentication token: {exc}") from None
        if not isinstance(claims, dict):
            raise AuthenticationError("Failed to authentication token: the payload is not a JSON object")
        self._check_audience(claims)
        return claims

    def role(self, token: str) -> str:
        return self.identity(token)[0]

    def identity(self, token: str) -> tuple[str, float | None]:
        """The token's role and expiry (``exp``, seconds since the epoch; ``None`` = never)."""
        claims = self.claims(token)
        exp = claims.get("exp")
        return self._role_of(claims), float(exp) if isinstance(exp, (int, float)) else None

    def _role_of(self, claims: Mapping[str, Any]) -> str:
        value = claims.get(self.role_claim)
        if isinstance(value, list):
            value = value[0] if value and isinstance(value[0], str) else None
        if not isinstance(value, str) or not value:
            raise AuthenticationError(
                f"The token has no role: claim '{self.role_claim}' is missing or not a string"
            )
        return value

    def _check_audience(self, claims: Mapping[str, Any]) -> None:
        if self.audience_claim is None:
            return
        found = claims.get(self.audience_claim)
        audiences = found if isinstance(found, list) else [found] if isinstance(found, str) else None
        if audiences is None:
            raise AuthenticationError(
                f"Found null or malformed audience in token, for claimed field: {self.audience_claim}"
            )
        if self.audience not in audiences:
            raise AuthenticationError(
                f"Audiences in token: [{', '.join(map(str, audiences))}] not contains this broker: {self.audience}"
            )
