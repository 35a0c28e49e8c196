"""``zpi_host.fs.shipped.read_shipped``: a file a repository ships is read only when it is a
regular file, not linked out of its root, and not over its limit (real files under tmp_path)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from zpi_host.fs.shipped import CONFIG_LIMIT, ShippedFileError, read_shipped


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def test_a_regular_file_is_read_whole(project):
    (project / "a.json").write_bytes(b"{}\n")
    assert read_shipped(project / "a.json", limit=10, root=project) == b"{}\n"


def test_a_missing_file_is_file_not_found(project):
    with pytest.raises(FileNotFoundError):
        read_shipped(project / "none.json", limit=10, root=project)
    os.symlink(project / "gone", project / "dangling")
    with pytest.raises(FileNotFoundError):
        read_shipped(project / "dangling", limit=10, root=project)


def test_a_fifo_is_refused_without_blocking(project):
    os.mkfifo(project / "pipe")
    with pytest.raises(ShippedFileError) as caught:
        read_shipped(project / "pipe", limit=10, root=project, what="settings file")
    assert str(caught.value) == (f"{project}/pipe: it is a FIFO (named pipe), not a regular "
                                 "file; it was not read: a settings file must be a regular "
                                 "file; replace or remove it")


def test_a_device_is_refused_with_or_without_a_root(project):
    os.symlink("/dev/zero", project / "zero")
    with pytest.raises(ShippedFileError, match=r"it is a symlink to /dev/zero, outside "):
        read_shipped(project / "zero", limit=CONFIG_LIMIT, root=project)
    with pytest.raises(ShippedFileError, match=r"it is a character device \(it links to "
                                               r"/dev/zero\), not a regular file"):
        read_shipped(project / "zero", limit=CONFIG_LIMIT)


def test_a_directory_is_refused(project):
    (project / "folder").mkdir()
    with pytest.raises(ShippedFileError, match="it is a directory, not a regular file"):
        read_shipped(project / "folder", limit=10, root=project)


def test_a_link_inside_the_root_is_followed_one_outside_is_refused(tmp_path, project):
    (project / "docs").mkdir()
    (project / "docs" / "real.md").write_text("mine")
    os.symlink("docs/real.md", project / "inside.md")
    assert read_shipped(project / "inside.md", limit=10, root=project) == b"mine"
    (tmp_path / "secret").write_text("theirs")
    os.symlink(tmp_path / "secret", project / "outside.md")
    with pytest.raises(ShippedFileError) as caught:
        read_shipped(project / "outside.md", limit=10, root=project, what="context file")
    assert caught.value.problem == f"it is a symlink to {tmp_path}/secret, outside {project}"
    assert "a context file a repository ships may only link to files inside it" in str(
        caught.value)
    assert read_shipped(project / "outside.md", limit=10) == b"theirs"  # no root: the user's


def test_a_file_over_the_limit_is_refused_whole(project):
    (project / "big").write_bytes(b"x" * 11)
    (project / "fits").write_bytes(b"x" * 10)
    assert read_shipped(project / "fits", limit=10) == b"x" * 10
    with pytest.raises(ShippedFileError) as caught:
        read_shipped(project / "big", limit=10, what="ignore file")
    assert caught.value.problem == "it is 11 bytes, more than the 10 bytes an ignore file may have"
    with pytest.raises(ShippedFileError, match="more than the 1 MiB a file may have"):
        (project / "huge").write_bytes(b"x" * (CONFIG_LIMIT + 1))
        read_shipped(project / "huge", limit=CONFIG_LIMIT)



def test_a_file_under_a_linked_folder_leads_out(tmp_path, project):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "settings.json").write_text("{}")
    os.symlink(tmp_path / "elsewhere", project / ".zpi")
    with pytest.raises(ShippedFileError) as caught:
        read_shipped(project / ".zpi" / "settings.json", limit=10, root=project)
    assert caught.value.problem == (f"it leads to {tmp_path}/elsewhere/settings.json, outside "
                                    f"{project}")
