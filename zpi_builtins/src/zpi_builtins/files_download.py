"""``download_file`` of ``builtins:files``: a URL saved to a file, whole or not at all.

Every host (the first and each redirect's) goes through the web service's address guard
(:mod:`.web_guard`, with ``plugins.builtins.web.allow_private_addresses`` and
``allowed_networks``), and connections go only to the address it checked. The body is asked
for without content encoding (``identity``), so what is counted is what is written; past
``plugins.builtins.files.download_max_bytes`` (or a ``Content-Length`` over it) the download
stops. It is written to a temporary file beside the destination, synced, then renamed into
place: a failed or stopped download leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

from zpi_host.tools import ToolContext, ToolFailure, ToolResult

REDIRECTS = (301, 302, 303, 307, 308)
USER_AGENT = "zpi-host (download_file)"


def _guard(web: Mapping[str, Any]) -> Any:
    from .web_guard import AddressGuard, parse_networks

    return AddressGuard(allow_private=web["allow_private_addresses"] is True,
                        allowed=parse_networks(web["allowed_networks"],
                                               "plugins.builtins.web.allowed_networks"))


def _destination(ctx: ToolContext, raw: str, overwrite: bool) -> Path:
    from zpi_host.fs import nofollow

    try:
        real = ctx.target(raw).real
    except nofollow.UnusablePathError as exc:
        raise ToolFailure(str(exc), {"path": raw}) from None
    if os.path.lexists(real) and not (overwrite and real.is_file() and not real.is_symlink()):
        more = "; set overwrite to replace it" if real.is_file() else ""
        raise ToolFailure(f"{raw} already exists{more}", {"path": raw})
    if not real.parent.is_dir():
        raise ToolFailure(f"the folder of {raw} does not exist; make it first", {"path": raw})
    return real


async def _save(response: Any, temp: Any, limit: int, url: str) -> int:
    declared = response.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise ToolFailure(f"{url} is {declared} bytes, over the limit of {limit} "
                          "(setting plugins.builtins.files.download_max_bytes)")
    written = 0
    async for chunk in response.aiter_raw():
        written += len(chunk)
        if written > limit:
            raise ToolFailure(f"{url} is larger than the limit of {limit} bytes (setting "
                              "plugins.builtins.files.download_max_bytes); nothing was saved")
        temp.write(chunk)
    return written


async def download_file(args: Mapping[str, Any], ctx: ToolContext,
                        config: Mapping[str, Any]) -> ToolResult:
    import anyio
    import httpcore
    import httpx

    from .web_fetch import split_url
    from .web_guard import AddressRefused, PinnedBackend

    url, raw = args["url"], args["path"]
    try:
        split_url(url)
    except Exception as exc:
        raise ToolFailure(str(exc), {"url": url}) from None
    real = _destination(ctx, raw, args.get("overwrite") is True)
    web = config["web"]
    guard, limit = _guard(web), int(config["download_max_bytes"])
    timeout = float(config["download_timeout_seconds"])
    backend = PinnedBackend()
    transport = httpx.AsyncHTTPTransport(trust_env=False)
    transport._pool = httpcore.AsyncConnectionPool(  # only the addresses the guard checked
        ssl_context=httpx.create_ssl_context(trust_env=False), network_backend=backend)
    fd, temp_name = tempfile.mkstemp(prefix=f".{real.name}.", suffix=".zpi-download",
                                     dir=real.parent)
    temp_path = Path(temp_name)
    try:
        with os.fdopen(fd, "wb") as temp:
            with anyio.fail_after(timeout):
                async with httpx.AsyncClient(transport=transport, trust_env=False,
                                             follow_redirects=False, timeout=timeout,
                                             headers={"User-Agent": USER_AGENT,
                                                      "Accept-Encoding": "identity"}) as client:
                    current = url
                    for _ in range(int(web["max_redirects"]) + 1):
                        _, host, port = split_url(current)
                        backend.pins[host] = await guard.check(host, port)
                        async with client.stream("GET", current) as response:
                            if response.status_code in REDIRECTS and \
                                    "location" in response.headers:
                                current = urljoin(current, response.headers["location"])
                                continue
                            if response.status_code != 200:
                                raise ToolFailure(f"{current} answered HTTP "
                                                  f"{response.status_code}; nothing was saved",
                                                  {"url": current,
                                                   "status": response.status_code})
                            size = await _save(response, temp, limit, current)
                            kind = response.headers.get("content-type", "")
                            break
                    else:
                        raise ToolFailure(f"{url} redirected more than {web['max_redirects']} "
                                          "times (setting plugins.builtins.web.max_redirects)")
            temp.flush()
            os.fsync(temp.fileno())
        if ctx.before_change is not None and real.is_file():
            ctx.before_change(real)
        if args.get("overwrite") is True:
            os.replace(temp_path, real)
        else:
            os.link(temp_path, real)  # fails if something took the name meanwhile
            temp_path.unlink()
    except AddressRefused as exc:
        raise ToolFailure(str(exc), {"url": url}) from None
    except TimeoutError:
        raise ToolFailure(f"downloading {url} took longer than {timeout:g} s (setting "
                          "plugins.builtins.files.download_timeout_seconds)") from None
    except httpx.HTTPError as exc:
        raise ToolFailure(f"downloading {url} failed: {type(exc).__name__}: {exc}") from None
    except OSError as exc:
        raise ToolFailure(f"cannot save {raw}: {exc.strerror or exc}", {"path": raw}) from None
    finally:
        with contextlib.suppress(OSError):
            temp_path.unlink()
    return ToolResult.text(f"Downloaded {current} to {raw} ({size} bytes)",
                           details={"url": current, "path": str(real), "bytes": size,
                                    "content_type": kind})
