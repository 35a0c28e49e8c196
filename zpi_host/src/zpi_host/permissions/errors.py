"""The error of permission settings and options that cannot be used.

Its own module because it is raised on both sides of an import: by :mod:`.paths` (an extra
directory that is not one), and by :mod:`.rules` and :mod:`.policy` (a rule that does not
parse, an unknown mode), which import :mod:`.paths`.
"""

from __future__ import annotations

from ..errors import UsageError


class PermissionConfigError(UsageError):
    """Permission settings or options that cannot be used: a bad mode, rule or directory."""
