"""``brokerlb tokens``: Pulsar's ``pulsar tokens`` -- keys and tokens for token authentication.

::

    brokerlb tokens create-secret-key --output my-secret.key            # 32 random bytes (HS256)
    brokerlb tokens create-secret-key --base64                          # printed as base64
    brokerlb tokens create-key-pair --output-private-key my-private.key --output-public-key my-public.key
    brokerlb tokens create --secret-key file:///path/my-secret.key --subject admin [--expiry-time 1y]
    brokerlb tokens create --private-key file:///path/my-private.key --subject app-1
    brokerlb tokens show <token>                                        # header and claims, unverified
    brokerlb tokens validate --secret-key file:///path/my-secret.key <token>

Keys are given as Pulsar takes them: ``file:///path``, ``data:;base64,...``, ``env:VAR``, a path or
base64 (:func:`brokerlb.security.tokens.read_key_setting`). The broker reads the secret key from
``tokenSecretKey`` or the public key from ``tokenPublicKey``.
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

import typer

from brokerlb.cli.common import cli_errors, console, print_json

app = typer.Typer(no_args_is_help=True, help="Keys and tokens for token authentication (as `pulsar tokens`).")

_OUTPUT = typer.Option(None, "--output", "-o", help="file to write (default: print as base64)")
_PRIVATE_OUT = typer.Option(..., "--output-private-key", help="private key file (PKCS#8 DER)")
_PUBLIC_OUT = typer.Option(..., "--output-public-key", help="public key file (X.509 DER)")
_HEADERS = typer.Option([], "--headers", "-hs", help="extra header key=value (repeatable)")
_ALG = typer.Option(
    None, "--algorithm", "-a", help="HS256 (secret key); RS256 (default), ES256, ... (key pair)"
)


def _write(path: Path | None, data: bytes, as_base64: bool) -> None:
    payload = base64.b64encode(data) if as_base64 else data
    if path is None:
        sys.stdout.write((payload if as_base64 else base64.b64encode(data)).decode() + "\n")
        return
    path.write_bytes(payload)
    path.chmod(0o600)


@app.command("create-secret-key")
def create_secret_key(
    output: Path | None = _OUTPUT,
    as_base64: bool = typer.Option(False, "--base64", "-b", help="write the key as base64 text"),
    algorithm: str | None = _ALG,
) -> None:
    """A new secret key (HS256) for tokenSecretKey."""
    from brokerlb.security.tokens import create_secret_key as new_key
    from brokerlb.security.tokens import secret_key

    with cli_errors():
        key = new_key()
        secret_key(key, algorithm or "HS256")
        _write(output, key, as_base64)


@app.command("create-key-pair")
def create_key_pair(
    output_private_key: Path = _PRIVATE_OUT,
    output_public_key: Path = _PUBLIC_OUT,
    algorithm: str | None = _ALG,
) -> None:
    """A new key pair: the private key signs tokens, the broker's tokenPublicKey verifies them."""
    from brokerlb.security.tokens import create_key_pair as new_pair

    with cli_errors():
        private, public = new_pair(algorithm or "RS256")
        output_private_key.write_bytes(private)
        output_private_key.chmod(0o600)
        output_public_key.write_bytes(public)


@app.command("create")
def create(
    subject: str = typer.Option(..., "--subject", "-s", help="the role the token stands for"),
    secret_key_setting: str | None = typer.Option(None, "--secret-key", "-sk", help="secret key (HS256)"),
    private_key_setting: str | None = typer.Option(None, "--private-key", "-pk", help="private key"),
    expiry_time: str | None = typer.Option(None, "--expiry-time", "-e", help="e.g. 30s, 10m, 2h, 7d, 1y"),
    algorithm: str | None = _ALG,
    headers: list[str] = _HEADERS,
) -> None:
    """A signed token for --subject (printed)."""
    from brokerlb.errors import InvalidConfigError
    from brokerlb.security import tokens

    with cli_errors():
        if (secret_key_setting is None) == (private_key_setting is None):
            raise InvalidConfigError(
                "--secret-key", None, "give exactly one of --secret-key and --private-key"
            )
        if secret_key_setting is not None:
            key = tokens.secret_key(
                tokens.read_key_setting(secret_key_setting, "--secret-key"), algorithm or "HS256"
            )
        else:
            key = tokens.private_key(
                tokens.read_key_setting(private_key_setting or "", "--private-key"), algorithm or "RS256"
            )
        extra = {}
        for item in headers:
            name, sep, value = item.partition("=")
            if not sep:
                raise InvalidConfigError("--headers", item, "expected key=value")
            extra[name] = value
        expires = tokens.parse_duration(expiry_time) if expiry_time else None
        sys.stdout.write(tokens.create_token(key, subject, expires_in=expires, headers=extra) + "\n")


@app.command("show")
def show(token: str = typer.Argument(..., help="the token")) -> None:
    """The token's header and claims, without checking its signature."""
    import jwt

    from brokerlb.errors import InvalidInputError

    with cli_errors():
        try:
            header = jwt.get_unverified_header(token)
            claims = jwt.decode(token, options={"verify_signature": False})
        except jwt.PyJWTError as exc:
            raise InvalidInputError(f"Not a token: {exc}") from None
        print_json({"header": header, "claims": claims})


@app.command("validate")
def validate(
    token: str = typer.Argument(..., help="the token"),
    secret_key_setting: str | None = typer.Option(None, "--secret-key", "-sk"),
    public_key_setting: str | None = typer.Option(None, "--public-key", "-pk"),
    algorithm: str | None = _ALG,
) -> None:
    """Check the token's signature (and expiry) with the key; print its claims."""
    from brokerlb.errors import InvalidConfigError
    from brokerlb.security import tokens

    with cli_errors():
        if (secret_key_setting is None) == (public_key_setting is None):
            raise InvalidConfigError(
                "--secret-key", None, "give exactly one of --secret-key and --public-key"
            )
        if secret_key_setting is not None:
            key: tokens.SigningKey | tokens.VerificationKey = tokens.secret_key(
                tokens.read_key_setting(secret_key_setting, "--secret-key"), algorithm or "HS256"
            )
        else:
            key = tokens.public_key(
                tokens.read_key_setting(public_key_setting or "", "--public-key"), algorithm or "RS256"
            )
        claims = tokens.TokenVerifier(key).claims(token)
        console.print(json.dumps(claims), highlight=False)
