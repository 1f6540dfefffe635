"""`files` preparation (§2.1): real files in tmp_path, real symlinks, FIFOs and sockets."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from corral.orchestration import FileLimits, InvalidRequestError, PreparedFiles, prepare_files
from corral.orchestration.errors import error_details

SMALL = FileLimits(inline_attachment_limit_bytes=1024, payload_limit_bytes=4096)


def _write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8")
    else:
        path.write_bytes(data)
    return path


def _prepare(files: object, cwd: Path, **kwargs: object) -> PreparedFiles:
    return prepare_files(files, cwd=cwd, **kwargs)  # type: ignore[arg-type]


def _rejects(files: object, cwd: Path, match: str, **kwargs: object) -> InvalidRequestError:
    with pytest.raises(InvalidRequestError, match=match) as info:
        _prepare(files, cwd, **kwargs)
    assert error_details(info.value)["category"] == "invalid_request"
    assert "\n" not in info.value.message
    return info.value


# --- rendering -------------------------------------------------------------------------------


def test_without_files_text_is_sent_verbatim(tmp_path: Path) -> None:
    empty: tuple[object, ...] = (None, [], ())
    for files in empty:
        rendered = _prepare(files, tmp_path).render("Task", "Do the thing.")
        assert rendered.text == "Do the thing."
        assert rendered.embedded == rendered.referenced == ()


def test_embedded_file_block_then_heading(tmp_path: Path) -> None:
    _write(tmp_path / "notes.txt", "line one\nline two")
    prepared = _prepare(["notes.txt"], tmp_path)
    real = os.path.realpath(tmp_path / "notes.txt")
    assert prepared.canonical == (real,)
    rendered = prepared.render("Steer", "Look at this.")
    assert rendered.text == (
        f'<file name="{real}" bytes="17">\nline one\nline two\n</file>\n\nSteer:\nLook at this.'
    )
    assert rendered.embedded == (real,)
    assert rendered.payload_bytes == len(rendered.text.encode())


@pytest.mark.parametrize("heading", ["Task", "Steer", "Interrupt", "Reply", "Question", "Message"])
def test_every_heading(tmp_path: Path, heading: str) -> None:
    _write(tmp_path / "a.txt", "x")
    text = _prepare(["a.txt"], tmp_path).render(heading, "body").text  # type: ignore[arg-type]
    assert text.endswith(f"\n\n{heading}:\nbody")


def test_blocks_in_order_separated_by_blank_lines(tmp_path: Path) -> None:
    _write(tmp_path / "b.txt", "B")
    _write(tmp_path / "a.txt", "A")
    text = _prepare(["b.txt", "a.txt"], tmp_path).render("Task", "t").text
    real_a, real_b = (os.path.realpath(tmp_path / n) for n in ("a.txt", "b.txt"))
    assert (
        text
        == f'<file name="{real_b}" bytes="1">\nB\n</file>\n\n<file name="{real_a}" bytes="1">\nA\n</file>\n\nTask:\nt'
    )


def test_attribute_values_are_escaped(tmp_path: Path) -> None:
    name = 'we&ird "<name>"\x01.txt'
    _write(tmp_path / name, "x")
    text = _prepare([name], tmp_path).render("Task", "t").text
    assert 'we&amp;ird &quot;&lt;name&gt;&quot;&#x1;.txt" bytes="1">' in text


# --- resolution and canonical duplicates --------------------------------------------------------


def test_duplicates_through_different_spellings_collapse_first_wins(tmp_path: Path) -> None:
    _write(tmp_path / "src" / "a.py", "print(1)")
    _write(tmp_path / "b.py", "print(2)")
    (tmp_path / "link.py").symlink_to(tmp_path / "src" / "a.py")
    real_a = os.path.realpath(tmp_path / "src" / "a.py")
    prepared = _prepare(
        [
            "src/a.py",
            "b.py",
            "./src/a.py",
            "src/../src/a.py",
            str(tmp_path / "src" / "a.py"),
            "link.py",
            "b.py",
        ],
        tmp_path,
    )
    assert prepared.canonical == (real_a, os.path.realpath(tmp_path / "b.py"))
    assert prepared.render("Task", "t").text.count("<file ") == 2


def test_symlink_to_a_file_outside_resolves_to_its_real_path(tmp_path: Path) -> None:
    outside = _write(tmp_path / "elsewhere" / "secret.txt", "outside text")
    project = tmp_path / "project"
    project.mkdir()
    (project / "peek.txt").symlink_to(outside)
    prepared = _prepare(["peek.txt"], project)
    assert prepared.canonical == (os.path.realpath(outside),)
    assert "outside text" in prepared.render("Task", "t").text


def test_absolute_paths_and_parent_paths_outside_cwd_are_allowed(tmp_path: Path) -> None:
    _write(tmp_path / "up.txt", "up")
    cwd = tmp_path / "deep" / "cwd"
    cwd.mkdir(parents=True)
    prepared = _prepare(["../../up.txt", str(tmp_path / "up.txt")], cwd)
    assert prepared.canonical == (os.path.realpath(tmp_path / "up.txt"),)


def test_tilde_expands_to_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    _write(home / "h.txt", "home file")
    monkeypatch.setenv("HOME", str(home))
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    assert _prepare(["~/h.txt"], cwd).canonical == (os.path.realpath(home / "h.txt"),)


# --- rejections ------------------------------------------------------------------------------


def test_missing_file_rejects_the_whole_operation(tmp_path: Path) -> None:
    _write(tmp_path / "ok.txt", "fine")
    exc = _rejects(["ok.txt", "nope.txt"], tmp_path, r"^Cannot read file 'nope.txt': no such file")
    assert "regular files" in exc.message


def test_broken_symlink_is_rejected(tmp_path: Path) -> None:
    (tmp_path / "dangling").symlink_to(tmp_path / "gone.txt")
    _rejects(["dangling"], tmp_path, "Cannot read file 'dangling'")


def test_symlink_loop_is_rejected(tmp_path: Path) -> None:
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    _rejects(["loop"], tmp_path, "Cannot read file 'loop'")


def test_directory_is_rejected(tmp_path: Path) -> None:
    (tmp_path / "dir").mkdir()
    _rejects(["dir"], tmp_path, "Cannot read file .*not a regular file \\(a directory\\)")


def test_fifo_is_rejected_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    _rejects(["pipe"], tmp_path, "not a regular file \\(a FIFO\\)")


def test_socket_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "s.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.bind(str(path))
        _rejects(["s.sock"], tmp_path, "not a regular file \\(a socket\\)")


def test_device_is_rejected(tmp_path: Path) -> None:
    _rejects(["/dev/null"], tmp_path, "not a regular file \\(a device\\)")


def test_path_through_a_file_is_rejected(tmp_path: Path) -> None:
    _write(tmp_path / "plain.txt", "x")
    _rejects(["plain.txt/inner"], tmp_path, "Cannot read file 'plain.txt/inner'")


def test_unreadable_regular_file_is_rejected(tmp_path: Path) -> None:
    """Root ignores mode bits, so as root the test uses a real write-only procfs file instead."""
    if os.geteuid() != 0:
        target = _write(tmp_path / "locked.txt", "secret")
        target.chmod(0)
    else:
        target = Path("/proc/sys/vm/compact_memory")
        if not target.exists():
            pytest.skip("no unreadable regular file available to root here")
        try:
            os.close(os.open(target, os.O_RDONLY))
        except PermissionError:
            pass
        else:
            pytest.skip(f"{target} is readable by root here")
    (tmp_path / "link").symlink_to(target)
    exc = _rejects(["link"], tmp_path, "Cannot read file .*permission denied")
    assert str(target) in exc.message


@pytest.mark.parametrize("entry", ["", "   ", "\t\n"])
def test_blank_entries_are_rejected(tmp_path: Path, entry: str) -> None:
    _rejects([entry], tmp_path, r"^files\[0\] is blank")


@pytest.mark.parametrize("entry", [3, None, ["a"], {"path": "a"}])
def test_non_string_entries_are_rejected(tmp_path: Path, entry: object) -> None:
    _rejects([entry], tmp_path, r"^files\[0\] is .*not a string")


@pytest.mark.parametrize("value", ["a.txt", 5, {"a.txt": 1}])
def test_files_must_be_a_list(tmp_path: Path, value: object) -> None:
    _rejects(value, tmp_path, "^files must be a list")


# --- embedding rules and limits ---------------------------------------------------------------


def test_file_over_the_inline_limit_stays_a_reference(tmp_path: Path) -> None:
    _write(tmp_path / "exact.txt", "x" * 1024)
    _write(tmp_path / "big.txt", "x" * 1025)
    prepared = _prepare(["exact.txt", "big.txt"], tmp_path, limits=SMALL)
    rendered = prepared.render("Task", "t")
    real_big = os.path.realpath(tmp_path / "big.txt")
    assert rendered.embedded == (os.path.realpath(tmp_path / "exact.txt"),)
    assert rendered.referenced == (real_big,)
    assert f'<file name="{real_big}" bytes="1025" />' in rendered.text


def test_nul_bytes_and_invalid_utf8_stay_references(tmp_path: Path) -> None:
    _write(tmp_path / "nul.bin", b"ab\x00cd")
    _write(tmp_path / "latin1.txt", "caf\xe9".encode("latin-1"))
    prepared = _prepare(["nul.bin", "latin1.txt"], tmp_path)
    assert [f.not_embeddable_reason for f in prepared.files] == ["contains NUL bytes", "not UTF-8"]
    rendered = prepared.render("Task", "t")
    assert rendered.embedded == ()
    assert rendered.text.startswith(f'<file name="{os.path.realpath(tmp_path / "nul.bin")}" bytes="5" />')


def test_file_whose_size_disagrees_with_its_content_stays_a_reference(tmp_path: Path) -> None:
    """procfs reports size 0 but yields text: the snapshot cannot be trusted, so it is not embedded."""
    proc = Path("/proc/version")
    if not proc.exists() or proc.stat().st_size != 0:
        pytest.skip("needs a procfs file whose stat size is 0")
    prepared = _prepare([str(proc)], tmp_path)
    assert prepared.files[0].not_embeddable_reason == "changed while read"
    assert prepared.render("Task", "t").embedded == ()


def test_embedding_is_whole_files_in_order_within_the_payload(tmp_path: Path) -> None:
    for name, letter in (("one.txt", "a"), ("two.txt", "b"), ("three.txt", "c")):
        _write(tmp_path / name, letter * 1000)
    limits = FileLimits(inline_attachment_limit_bytes=1024, payload_limit_bytes=2500)
    rendered = _prepare(["one.txt", "two.txt", "three.txt"], tmp_path, limits=limits).render("Task", "t")
    names = [os.path.realpath(tmp_path / n) for n in ("one.txt", "two.txt", "three.txt")]
    assert rendered.embedded == (names[0], names[1])
    assert rendered.referenced == (names[2],)
    assert rendered.payload_bytes <= 2500
    assert rendered.payload_bytes == len(rendered.text.encode())
    assert "b" * 1000 in rendered.text
    assert "c" * 1000 not in rendered.text


def test_all_references_over_the_payload_limit_fails(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 200) / ("e" * 200)
    entries = []
    for index in range(12):
        _write(deep / f"{index:02d}.txt", "x")
        entries.append(str(deep / f"{index:02d}.txt"))
    limits = FileLimits(inline_attachment_limit_bytes=1024, payload_limit_bytes=1024)
    prepared = _prepare(entries, tmp_path, limits=limits)
    with pytest.raises(
        InvalidRequestError, match=r"^Mailbox payload is \d+ bytes; configured limit is 1024 bytes"
    ):
        prepared.render("Task", "t")


def test_text_alone_over_the_payload_limit_fails(tmp_path: Path) -> None:
    limits = FileLimits(inline_attachment_limit_bytes=1024, payload_limit_bytes=1024)
    prepared = _prepare(None, tmp_path, limits=limits)
    assert prepared.render("Task", "é" * 512).payload_bytes == 1024
    with pytest.raises(
        InvalidRequestError, match="Mailbox payload is 1025 bytes; configured limit is 1024 bytes"
    ):
        prepared.render("Task", "é" * 512 + "x")


def test_overhead_counts_against_the_payload(tmp_path: Path) -> None:
    _write(tmp_path / "a.txt", "a" * 900)
    prepared = _prepare(["a.txt"], tmp_path, limits=SMALL)
    assert prepared.render("Task", "t").embedded
    assert not prepared.render("Task", "t", overhead_bytes=3500).embedded


def test_snapshot_is_taken_at_preparation(tmp_path: Path) -> None:
    path = _write(tmp_path / "a.txt", "before")
    prepared = _prepare(["a.txt"], tmp_path)
    path.write_text("after")
    assert "before" in prepared.render("Task", "t").text


@pytest.mark.parametrize(
    "kwargs",
    [
        {"inline_attachment_limit_bytes": 1023},
        {"inline_attachment_limit_bytes": 1048577},
        {"payload_limit_bytes": 1023},
        {"payload_limit_bytes": 1048577},
        {"payload_limit_bytes": True},
        {"payload_limit_bytes": 2048.0},
    ],
)
def test_limits_are_bounded(kwargs: dict[str, object]) -> None:
    with pytest.raises(InvalidRequestError, match="from 1024 through 1048576"):
        FileLimits(**kwargs)  # type: ignore[arg-type]


def test_limit_defaults() -> None:
    limits = FileLimits()
    assert limits.inline_attachment_limit_bytes == 131072
    assert limits.payload_limit_bytes == 131072
    FileLimits(inline_attachment_limit_bytes=1024, payload_limit_bytes=1048576)


# --- result references -----------------------------------------------------------------------


def test_result_ref_resolves_to_an_artifact_file(tmp_path: Path) -> None:
    artifact = _write(tmp_path / "results" / "req-1", "the result")
    seen: list[str] = []

    def resolve(request_id: str) -> Path | str | None:
        seen.append(request_id)
        return artifact

    prepared = _prepare(["result:req-1", "result:req-1"], tmp_path, resolve_result_ref=resolve)
    assert seen == ["req-1"]
    assert prepared.canonical == ("result:req-1",)
    assert (
        prepared.render("Reply", "r").text
        == '<file name="result:req-1" bytes="10">\nthe result\n</file>\n\nReply:\nr'
    )


def test_large_result_ref_is_a_reference_with_its_path(tmp_path: Path) -> None:
    artifact = _write(tmp_path / "results" / "req-2", "y" * 2000)
    prepared = _prepare(["result:req-2"], tmp_path, limits=SMALL, resolve_result_ref=lambda _: artifact)
    text = prepared.render("Task", "t").text
    assert text.startswith(f'<file name="result:req-2" bytes="2000" path="{os.path.realpath(artifact)}" />')


def test_result_ref_given_as_text(tmp_path: Path) -> None:
    prepared = _prepare(["result:r"], tmp_path, resolve_result_ref=lambda _: "done: all green")
    assert prepared.render("Task", "t").text.startswith(
        '<file name="result:r" bytes="15">\ndone: all green\n</file>'
    )


def test_result_text_too_large_to_embed_is_rejected(tmp_path: Path) -> None:
    _rejects(
        ["result:r"],
        tmp_path,
        "has no file to reference",
        limits=SMALL,
        resolve_result_ref=lambda _: "z" * 2000,
    )


@pytest.mark.parametrize("entry", ["result:unknown", "result:"])
def test_unknown_result_ref_is_rejected(tmp_path: Path, entry: str) -> None:
    _rejects([entry], tmp_path, "Canonical result references are opaque", resolve_result_ref=lambda _: None)
    _rejects([entry], tmp_path, "Canonical result references are opaque")


def test_result_ref_whose_artifact_vanished_is_rejected(tmp_path: Path) -> None:
    _rejects(
        ["result:r"], tmp_path, "Cannot read file 'result:r'", resolve_result_ref=lambda _: tmp_path / "gone"
    )


def test_result_ref_and_path_keep_their_own_names(tmp_path: Path) -> None:
    artifact = _write(tmp_path / "res", "R")
    prepared = _prepare(["result:x", "res"], tmp_path, resolve_result_ref=lambda _: artifact)
    assert prepared.canonical == ("result:x", os.path.realpath(artifact))


def test_file_replaced_between_stat_and_open_is_rejected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A deterministic stand-in for the race: the path is swapped for another file just before it is opened."""
    target = _write(tmp_path / "a.txt", "original")
    impostor = _write(tmp_path / "impostor.txt", "swapped in")
    real_open = os.open

    def swapping_open(path: str | os.PathLike[str], flags: int, *args: int, **kwargs: object) -> int:
        if Path(path) == Path(os.path.realpath(target)):
            os.replace(impostor, target)
        return real_open(path, flags, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", swapping_open)
    _rejects(["a.txt"], tmp_path, "replaced while it was being opened")
