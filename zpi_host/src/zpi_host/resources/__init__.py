"""Skills, commands, agent definitions and context files, found by one ResourceLoader.

``items`` holds the types, ``rules`` each kind's field rules, ``loader`` the search itself;
frontmatter syntax is parsed in :mod:`zpi_host.frontmatter`. Importing this package does not
import python-frontmatter or PyYAML: they load with the first :meth:`ResourceLoader.load`.
"""

from __future__ import annotations

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
