"""Reading and writing inside a folder by plain names: no link is followed, no name leads outside."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcpipechekr.artifacts.confined import ConfinedPathError, read_confined, write_confined

SECRET = "root:$6$PLANTED$x:19000:0:99999:7:::\n"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret").write_text(SECRET)
    return folder


def test_a_file_is_written_atomically_and_read_back(tmp_path: Path) -> None:
    root = tmp_path / "home"
    path = write_confined(root, ("cases", "a.yaml"), "one\n")
    assert path == root / "cases" / "a.yaml" and path.read_text() == "one\n"
    write_confined(root, ("cases", "a.yaml"), "two\n")
    assert read_confined(root, ("cases", "a.yaml")) == "two\n"
    assert os.listdir(root / "cases") == ["a.yaml"]


@pytest.mark.parametrize("parts", [("..", "x"), ("cases", ".."), ("a/b",), ("",), ("cases", "x\x00"), ()])
def test_a_name_that_is_not_plain_is_refused_before_anything_is_opened(
    tmp_path: Path, parts: tuple[str, ...]
) -> None:
    root = tmp_path / "home"
    with pytest.raises(ConfinedPathError, match="refused|no file named"):
        write_confined(root, parts, "x")
    with pytest.raises(ConfinedPathError):
        read_confined(root, parts)
    assert not root.exists()


def test_a_link_at_the_file_is_neither_written_through_nor_read(tmp_path: Path, outside: Path) -> None:
    root = tmp_path / "home"
    (root / "cases").mkdir(parents=True)
    (root / "cases" / "a.yaml").symlink_to(outside / "secret")
    (root / "cases" / "new.yaml").symlink_to(outside / "created-through-link")
    for name in ("a.yaml", "new.yaml"):
        with pytest.raises(ConfinedPathError, match="a symbolic link") as refused:
            write_confined(root, ("cases", name), "overwritten\n")
        assert SECRET.strip() not in refused.value.message
    with pytest.raises(ConfinedPathError, match="a symbolic link") as refused:
        read_confined(root, ("cases", "a.yaml"))
    assert "PLANTED" not in refused.value.message
    assert sorted(os.listdir(outside)) == ["secret"] and (outside / "secret").read_text() == SECRET
    assert sorted(os.listdir(root / "cases")) == ["a.yaml", "new.yaml"]


def test_a_link_in_place_of_a_folder_on_the_way_is_not_followed(tmp_path: Path, outside: Path) -> None:
    root = tmp_path / "home"
    root.mkdir()
    (root / "cases").symlink_to(outside, target_is_directory=True)
    with pytest.raises(ConfinedPathError, match="cases: a symbolic link"):
        write_confined(root, ("cases", "x.yaml"), "x")
    with pytest.raises(ConfinedPathError, match="cases: a symbolic link"):
        read_confined(root, ("cases", "secret"))
    assert sorted(os.listdir(outside)) == ["secret"]


def test_only_a_small_regular_file_with_one_link_is_read(tmp_path: Path, outside: Path) -> None:
    root = tmp_path / "home"
    write_confined(root, ("cases", "big.yaml"), "x" * 11)
    with pytest.raises(ConfinedPathError, match="larger than 10 bytes"):
        read_confined(root, ("cases", "big.yaml"), max_bytes=10)
    os.link(outside / "secret", root / "cases" / "hard.yaml")
    with pytest.raises(ConfinedPathError, match="2 hard links") as refused:
        read_confined(root, ("cases", "hard.yaml"))
    assert "PLANTED" not in refused.value.message
    os.mkfifo(root / "cases" / "fifo.yaml")
    with pytest.raises(ConfinedPathError, match="a special file, not a regular file"):
        read_confined(root, ("cases", "fifo.yaml"))
    with pytest.raises(ConfinedPathError, match="a special file, not a regular file"):
        write_confined(root, ("cases", "fifo.yaml"), "x")
    (root / "cases" / "bytes.yaml").write_bytes(b"\xff\xfe")
    with pytest.raises(ConfinedPathError, match="not UTF-8 text"):
        read_confined(root, ("cases", "bytes.yaml"))
    with pytest.raises(FileNotFoundError):
        read_confined(root, ("cases", "missing.yaml"))
    with pytest.raises(FileNotFoundError):
        read_confined(root, ("elsewhere", "missing.yaml"))
