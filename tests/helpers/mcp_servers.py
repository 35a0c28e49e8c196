"""An MCP server written with the ``mcp`` package's server API (MCPServer, FastMCP's new
name), run by the tests as a real subprocess: ``python mcp_servers.py stdio|sse|http PORT``.

Tools: ``echo`` (read-only), ``add``, ``big`` (a result of N characters), ``image`` (a 1x1
PNG), ``fail`` (an error result), ``sleep`` (never answers within a short timeout), ``env``
(a variable of its environment), ``grow`` (adds the tool ``extra`` and sends
``notifications/tools/list_changed``; with ``MCP_TEST_GROWN`` naming a file, it writes the
file, and a server started while the file exists offers ``extra`` from the start).
``MCP_TEST_GARBAGE=1`` makes it print garbage on stdout first; ``MCP_TEST_HANG=1`` makes it
never answer the handshake; ``MCP_TEST_PIDFILE`` names a file it writes its process id to;
``MCP_TEST_DELAY`` (seconds) delays its start.
"""

import base64
import os
import sys
import time
from pathlib import Path

from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.types import ToolAnnotations

SERVER_FILE = Path(__file__).resolve()
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")


def build() -> MCPServer:
    server = MCPServer("test-server")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def echo(text: str) -> str:
        """Say the text back."""
        return f"echo: {text}"

    @server.tool()
    def add(a: int, b: int) -> str:
        """Add two numbers."""
        return str(a + b)

    @server.tool()
    def big(n: int) -> str:
        return "x" * n

    @server.tool()
    def image() -> Image:
        return Image(data=PNG, format="png")

    @server.tool()
    def fail() -> str:
        raise ValueError("this tool always fails")

    @server.tool()
    def sleep(seconds: float) -> str:
        time.sleep(seconds)
        return "slept"

    @server.tool()
    def env(name: str) -> str:
        return os.environ.get(name, "(unset)")

    @server.tool()
    def pid() -> str:
        """The server's process id (its group leader: the host starts it in a new session)."""
        return str(os.getpid())

    def add_extra() -> None:
        server.add_tool(lambda: "extra!", name="extra", description="A tool added later.")

    @server.tool()
    async def grow(ctx: Context) -> str:
        """Offer one more tool from now on, and tell the client its tool list changed."""
        add_extra()
        if os.environ.get("MCP_TEST_GROWN"):
            Path(os.environ["MCP_TEST_GROWN"]).write_text("grown")
        await ctx.session.send_tool_list_changed()
        return "grown"

    if os.environ.get("MCP_TEST_GROWN") and Path(os.environ["MCP_TEST_GROWN"]).exists():
        add_extra()

    @server.tool()
    def crash() -> str:
        os._exit(3)

    @server.resource("notes://readme", mime_type="text/plain")
    def readme() -> str:
        """The project's notes."""
        return "the notes say hello"

    @server.prompt()
    def review(topic: str) -> str:
        return f"Please review {topic}."

    return server


def main() -> None:
    transport = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if os.environ.get("MCP_TEST_PIDFILE"):  # where a test finds the server's process
        Path(os.environ["MCP_TEST_PIDFILE"]).write_text(str(os.getpid()))
    if os.environ.get("MCP_TEST_DELAY"):  # a server that takes this long to start
        time.sleep(float(os.environ["MCP_TEST_DELAY"]))
    if os.environ.get("MCP_TEST_GARBAGE"):
        print("this is not JSON-RPC", flush=True)
    if os.environ.get("MCP_TEST_HANG"):
        time.sleep(3600)
    server = build()
    if transport == "stdio":
        server.run()
    else:
        port = int(sys.argv[2])
        server.run(transport="sse" if transport == "sse" else "streamable-http",
                   host="127.0.0.1", port=port)


if __name__ == "__main__":
    main()
