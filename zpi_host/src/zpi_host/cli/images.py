"""``zpi-host run --image FILE``: images attached to the prompt, for a model that reads them.

The files are read before the session starts (no-follow, regular files, at most the size a
model accepts, the type told by the magic bytes, as the read tool does), so a wrong path is a
usage error before anything runs; a model the catalog says has no vision is refused once the
session knows its model. The providers send them as their image blocks (Anthropic's
``image`` source, OpenAI's data-URL ``image_url``), after the prompt's text.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import docs_url
from .exits import CliUsageError


def read_images(paths: Sequence[str], cwd: str | None) -> list[Any]:
    """The ImageContent of each file, in order."""
    if not paths:
        return []
    from ..errors import ZpiError
    from ..fs.nofollow import open_regular
    from ..tools.base import ImageContent
    from ..tools.read import MAX_IMAGE_BYTES, sniff_image

    root = Path(cwd or ".").expanduser().resolve()
    images = []
    for given in paths:
        path = (root / Path(given).expanduser()).resolve()
        try:
            fd, st = open_regular(path)
        except FileNotFoundError:
            raise CliUsageError(f"--image {given}: no such file") from None
        except (OSError, ZpiError) as exc:
            raise CliUsageError(f"--image {given}: cannot be read ({exc})") from None
        try:
            if st.st_size > MAX_IMAGE_BYTES:
                raise CliUsageError(f"--image {given}: {st.st_size} bytes, more than the "
                                    f"{MAX_IMAGE_BYTES // (1024 * 1024)} MiB a model accepts; "
                                    "attach a smaller copy")
            data = os.read(fd, MAX_IMAGE_BYTES + 1)
        finally:
            os.close(fd)
        mime = sniff_image(data)
        if mime is None:
            raise CliUsageError(f"--image {given}: not a PNG, JPEG, GIF or WebP image")
        images.append(ImageContent.from_bytes(data, mime))
    return images


def check_vision(entry: Any, model: str, what: str = "--image") -> None:
    """Refuse images for a model the catalog knows and says cannot read them (a model the
    catalog does not know is given them: its provider says if it cannot)."""
    if entry is not None and not entry.vision:
        raise CliUsageError(f"{what}: the model {model} cannot read images (the model "
                            "catalog says it has no vision); choose a vision model with "
                            "--model, or set \"vision\": true for it under 'models' in "
                            f"settings.json (see {docs_url('models')})")
