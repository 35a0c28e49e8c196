"""``zpi-host run --image FILE``: the image goes with the prompt as each provider's image
block; a model the catalog says cannot read images is refused before anything is sent."""

from __future__ import annotations

import base64
import json

import pytest
from tests.e2e.test_cli_providers import KEY, run

from zpi_host.testing import ModelServer

#: a 1x1 PNG
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
                       "+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")


@pytest.mark.parametrize("fmt, variable", [("openai", "OPENAI_API_KEY"),
                                           ("anthropic", "ANTHROPIC_API_KEY")])
def test_an_attached_image_is_sent_as_the_providers_image_block(tmp_path, fmt, variable):
    (tmp_path / "shot.png").write_bytes(PNG)
    settings = tmp_path / "home/.zpi/agent/settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"models": {"seer": {
        "provider": fmt, "model": "gpt-test", "vision": True}}}))
    with ModelServer(["A red dot.", "Dot title"]) as server:
        out = run(tmp_path, "--model", "seer", "--base-url", server.base_url,
                  "--image", "shot.png", "what is this?", env_extra={variable: KEY})
        requests = list(server.requests)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "A red dot.\n"
    user = requests[0].json["messages"][-1]
    data = base64.b64encode(PNG).decode()
    if fmt == "anthropic":
        assert user["content"][0] == {"type": "text", "text": "what is this?"}
        image = {k: v for k, v in user["content"][1].items() if k != "cache_control"}
        assert image == {"type": "image", "source": {
            "type": "base64", "media_type": "image/png", "data": data}}
    else:
        assert user["content"][0] == {"type": "text", "text": "what is this?"}
        assert user["content"][1] == {"type": "image_url", "image_url": {
            "url": f"data:image/png;base64,{data}"}}


def test_a_model_without_vision_is_refused_and_a_bad_file_is_a_usage_error(tmp_path):
    (tmp_path / "shot.png").write_bytes(PNG)
    (tmp_path / "notes.txt").write_text("not an image")
    settings = tmp_path / "home/.zpi/agent/settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"models": {"blind": {
        "provider": "openai", "model": "gpt-blind", "vision": False}}}))
    with ModelServer(["never"]) as server:
        out = run(tmp_path, "--model", "blind", "--base-url", server.base_url,
                  "--image", "shot.png", "what is this?",
                  env_extra={"OPENAI_API_KEY": KEY})
        assert not server.requests
    assert out.returncode == 2
    assert "the model openai:gpt-blind cannot read images" in out.stderr
    out = run(tmp_path, "--model", "openai:unknown-model", "--image", "shot.png", "what?",
              env_extra={"OPENAI_API_KEY": KEY})  # not in the catalog: no vision known
    assert out.returncode == 2 and "cannot read images" in out.stderr
    out = run(tmp_path, "--model", "blind", "--image", "notes.txt", "what?",
              env_extra={"OPENAI_API_KEY": KEY})
    assert out.returncode == 2 and "not a PNG, JPEG, GIF or WebP image" in out.stderr
    out = run(tmp_path, "--model", "blind", "--image", "missing.png", "what?",
              env_extra={"OPENAI_API_KEY": KEY})
    assert out.returncode == 2 and "--image missing.png: no such file" in out.stderr
