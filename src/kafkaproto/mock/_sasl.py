"""SASL authentication: PLAIN (RFC 4616) and SCRAM-SHA-256/512 (RFC 5802,
RFC 7677) over SaslHandshake v1 and SaslAuthenticate, as a Kafka listener
with ``SASL_PLAINTEXT`` checks them.  Before a connection has authenticated
it may send ApiVersions, SaslHandshake and SaslAuthenticate only; anything
else closes it, as Kafka does."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os

from .. import messages as M
from ..error_codes import ErrorCode as E

SCRAM_ITERATIONS = 4096  # Kafka's minimum, and what its tools use by default
_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}


class SaslState:
    """Where one connection is in its authentication."""

    __slots__ = ("mechanism", "authenticated", "close_after", "scram", "user")

    def __init__(self):
        self.mechanism: str | None = None
        self.authenticated = False
        self.close_after = False
        self.scram: dict | None = None
        self.user: str | None = None

    def allows(self, api_key: int) -> bool:
        return self.authenticated or api_key in (17, 18, 36)


def _unescape(name: str) -> str:
    return name.replace("=2C", ",").replace("=3D", "=")


class SaslHandlers:
    _scram_keys: dict | None = None

    def _scram_credentials(self, mechanism: str, user: str):
        """(salt, stored key, server key) of a user, made once per mechanism."""
        if self._scram_keys is None:
            self._scram_keys = {}
        key = (mechanism, user)
        if key not in self._scram_keys:
            algo = _HASHES[mechanism]
            salt = os.urandom(16)
            salted = hashlib.pbkdf2_hmac(algo, self.users[user].encode(), salt, SCRAM_ITERATIONS)
            client_key = hmac.new(salted, b"Client Key", algo).digest()
            self._scram_keys[key] = (salt, hashlib.new(algo, client_key).digest(),
                                     hmac.new(salted, b"Server Key", algo).digest())
        return self._scram_keys[key]

    def sasl_handshake(self, ctx, m, v):
        R = M.SaslHandshakeResponse
        mechanisms = list(self.sasl_mechanisms) if self.users is not None else []
        if ctx.sasl is None or m.mechanism not in mechanisms:
            return R(error_code=E.UNSUPPORTED_SASL_MECHANISM if ctx.sasl is not None else E.ILLEGAL_SASL_STATE,
                     mechanisms=mechanisms)
        if ctx.sasl.authenticated or ctx.sasl.mechanism is not None:
            return R(error_code=E.ILLEGAL_SASL_STATE, mechanisms=mechanisms)
        ctx.sasl.mechanism = m.mechanism
        return R(mechanisms=mechanisms)

    def sasl_authenticate(self, ctx, m, v):
        R = M.SaslAuthenticateResponse
        state = ctx.sasl
        if state is None or state.mechanism is None or state.authenticated:
            if state is not None:
                state.close_after = True
            return R(error_code=E.ILLEGAL_SASL_STATE, error_message="SaslHandshake first", auth_bytes=b"")
        token = bytes(m.auth_bytes)
        try:
            if state.mechanism == "PLAIN":
                return self._plain(state, token)
            return self._scram(state, token)
        except (ValueError, KeyError, UnicodeDecodeError):
            state.close_after = True
            return R(error_code=E.SASL_AUTHENTICATION_FAILED, auth_bytes=b"",
                     error_message=f"Authentication failed during authentication due to invalid credentials "
                                   f"with SASL mechanism {state.mechanism}")

    def _plain(self, state, token: bytes):
        R = M.SaslAuthenticateResponse
        parts = token.split(b"\0")
        if len(parts) != 3:
            raise ValueError("a PLAIN token is authzid NUL authcid NUL passwd")
        _, user, password = (p.decode() for p in parts)
        if user not in self.users or not hmac.compare_digest(self.users[user].encode(), password.encode()):
            raise ValueError("bad credentials")
        state.authenticated, state.user = True, user
        return R(auth_bytes=b"", session_lifetime_ms=0)

    def _scram(self, state, token: bytes):
        R = M.SaslAuthenticateResponse
        algo = _HASHES[state.mechanism]
        text = token.decode()
        if state.scram is None:  # client-first: gs2 header, then n=user,r=nonce
            header, _, bare = text.partition(",")
            authzid, _, bare = bare.partition(",")
            if header not in ("n", "y") or not bare:
                raise ValueError("channel binding is not offered")
            attrs = dict(a.split("=", 1) for a in bare.split(","))
            user = _unescape(attrs["n"])
            if user not in self.users:
                raise ValueError("unknown user")
            salt, stored, server_key = self._scram_credentials(state.mechanism, user)
            nonce = attrs["r"] + base64.b64encode(os.urandom(18)).decode()
            first = f"r={nonce},s={base64.b64encode(salt).decode()},i={SCRAM_ITERATIONS}"
            state.scram = {"bare": bare, "first": first, "nonce": nonce, "user": user}
            return R(auth_bytes=first.encode())
        s = state.scram
        attrs = dict(a.split("=", 1) for a in text.split(","))
        if attrs["r"] != s["nonce"]:
            raise ValueError("nonce mismatch")
        without_proof = text[:text.rindex(",p=")]
        auth_message = f"{s['bare']},{s['first']},{without_proof}".encode()
        salt, stored, server_key = self._scram_credentials(state.mechanism, s["user"])
        signature = hmac.new(stored, auth_message, algo).digest()
        proof = base64.b64decode(attrs["p"])
        client_key = bytes(a ^ b for a, b in zip(proof, signature))
        if not hmac.compare_digest(hashlib.new(algo, client_key).digest(), stored):
            raise ValueError("bad proof")
        state.authenticated, state.user = True, s["user"]
        final = "v=" + base64.b64encode(hmac.new(server_key, auth_message, algo).digest()).decode()
        return R(auth_bytes=final.encode(), session_lifetime_ms=0)
