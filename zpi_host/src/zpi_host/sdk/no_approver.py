"""What a denial says in an SDK session without ``can_use_tool``: how to allow the call in the
SDK's own options (``allowed_tools``, ``can_use_tool``, ``permission_mode``), where the CLI
names its flags (the kernel's ``no_approver_hint`` session option)."""

from __future__ import annotations

from ..permissions import PermissionContext

__all__ = ["sdk_no_approver_hint"]


def sdk_no_approver_hint(context: PermissionContext) -> str:
    """How to allow a call that needs approval in an SDK session without ``can_use_tool``,
    in the SDK's words (its options), not the CLI's flags."""
    rules = context.suggestions or (context.tool,)
    ways = [f"allowed_tools=[{', '.join(repr(r) for r in rules)}]",
            "a can_use_tool callback"]
    if context.source == "mode" and context.tool in ("Write", "Edit", "write", "edit"):
        ways.insert(0, "permission_mode='acceptEdits'")
    return (f"needs approval and this session has no can_use_tool callback to ask; to allow "
            f"it, pass {', or '.join(ways)} in the options")
