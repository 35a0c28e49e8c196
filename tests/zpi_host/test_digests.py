"""zpi_host.support.digests: CPython's own SHA-256, the same digests as hashlib's."""

from __future__ import annotations

import hashlib

import pytest

from zpi_host.support.digests import sha256


@pytest.mark.parametrize("data", [b"", b"abc", "/tmp/ä\udcff".encode(errors="surrogateescape"),
                                  bytes(range(256)) * 100])
def test_sha256_matches_hashlib(data: bytes) -> None:
    assert sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()
    assert sha256(data).digest() == hashlib.sha256(data).digest()


def test_sha256_fed_in_parts_matches_hashlib() -> None:
    digest, reference = sha256(), hashlib.sha256()
    for part in (b"path\0", b"123\0", b"456\n", b"missing\n"):
        digest.update(part)
        reference.update(part)
    assert digest.hexdigest() == reference.hexdigest()
