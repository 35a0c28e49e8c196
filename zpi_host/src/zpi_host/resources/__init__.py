"""Skills, commands, agent definitions and context files, found by one ResourceLoader.

``items`` holds the types, ``rules`` each kind's field rules, ``loader`` the search itself;
frontmatter syntax is parsed in :mod:`zpi_host.resources.frontmatter`. Importing this package does
not
import python-frontmatter or PyYAML: they load with the first :meth:`ResourceLoader.load`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..support.lazy import lazy_attributes
from .items import (
    ALL_KINDS,
    AgentDefinition,
    Command,
    ContextFile,
    ResourceDiagnostic,
    ResourceSource,
    Skill,
    expand_template,
    split_arguments,
)

if TYPE_CHECKING:
    from .loader import CONTEXT_FILE_NAMES, ResourceLoader

__all__ = [
    "ALL_KINDS",
    "CONTEXT_FILE_NAMES",
    "AgentDefinition",
    "Command",
    "ContextFile",
    "ResourceDiagnostic",
    "ResourceLoader",
    "ResourceSource",
    "Skill",
    "expand_template",
    "split_arguments",
]

#: the loader's names, imported on first use: a plugin that only declares a Command
#: (``--list-plugins`` loads them all) does not import the search
__getattr__, __dir__ = lazy_attributes(
    __name__, {"CONTEXT_FILE_NAMES": "loader", "ResourceLoader": "loader"}, globals())
