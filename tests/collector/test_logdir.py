"""Listing a TensorBoard log directory: every event file below it in path order, bounded
per walk, through the fence (a fenced or unopenable directory is passed over with the
reason, a linked directory is not followed), and as the training user under an opener."""

from __future__ import annotations

from pathlib import Path

from tests.support.users import public_place, system_user
from tuneplane.collector.fence import Fence, SourceRefused, open_plainly
from tuneplane.collector.logdir import event_files
from tuneplane.collector.opener import Opener


def touch(*paths: Path) -> None:
    for path in paths:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")


def test_event_files_below_the_root_are_listed_in_path_order(tmp_path: Path) -> None:
    touch(tmp_path / "b" / "events.out.tfevents.2", tmp_path / "events.out.tfevents.1",
          tmp_path / "a" / "deep" / "x.tfevents.3", tmp_path / "a" / "notes.txt")
    listing = event_files(tmp_path)
    assert [p.relative_to(tmp_path).as_posix() for p in listing.files] == [
        "a/deep/x.tfevents.3", "b/events.out.tfevents.2", "events.out.tfevents.1"]
    assert listing.problems == []


def test_a_file_as_the_root_is_itself_and_a_missing_root_is_nothing_yet(
        tmp_path: Path) -> None:
    touch(tmp_path / "one.tfevents")
    assert event_files(tmp_path / "one.tfevents").files == [tmp_path / "one.tfevents"]
    assert event_files(tmp_path / "absent").files == []


def test_a_walk_stops_at_its_bound_and_says_so(tmp_path: Path) -> None:
    touch(*(tmp_path / f"d{i}" / f"junk{j}" for i in range(3) for j in range(10)))
    touch(tmp_path / "events.tfevents")
    listing = event_files(tmp_path, max_entries=15)
    assert listing.files == [tmp_path / "events.tfevents"]
    (problem,) = listing.problems
    assert f"{tmp_path}: more than 15 directory entries below it" in problem
    assert event_files(tmp_path, max_entries=34).problems == []  # 4 + 30 entries


def test_linked_and_fenced_directories_are_not_listed(tmp_path: Path) -> None:
    secret = tmp_path / "state"
    touch(secret / "node.tfevents", tmp_path / "logs" / "run.tfevents")
    (tmp_path / "logs" / "link").symlink_to(secret)
    fence = Fence.of([secret])
    assert event_files(tmp_path / "logs", fence).files == [tmp_path / "logs" / "run.tfevents"]
    (tmp_path / "pointing").symlink_to(secret)
    listing = event_files(tmp_path / "pointing", fence)
    assert listing.files == []
    assert listing.problems == [f"{tmp_path / 'pointing'}: not listed: {tmp_path / 'pointing'} "
                                f"is {secret}, inside {secret}, which sources are never read "
                                "from"]


def test_a_directory_that_cannot_be_opened_is_passed_over_with_the_reason(
        tmp_path: Path) -> None:
    touch(tmp_path / "shut" / "a.tfevents", tmp_path / "open" / "b.tfevents")

    def refusing(path: Path) -> int:
        if path.name == "shut":
            raise SourceRefused(f"{path} cannot be opened as someone: Permission denied", 13)
        return open_plainly(path)
    listing = event_files(tmp_path, Fence.of([], refusing))
    assert listing.files == [tmp_path / "open" / "b.tfevents"]
    assert listing.problems == [f"{tmp_path / 'shut'}: not listed: {tmp_path / 'shut'} "
                                "cannot be opened as someone: Permission denied"]


def test_under_an_opener_only_what_the_training_user_may_list_is_listed() -> None:
    with system_user() as user, public_place() as place:
        where = place / "logs"
        touch(where / "public" / "a.tfevents", where / "private" / "b.tfevents")
        for directory in (where, where / "public"):
            directory.chmod(0o755)
        (where / "private").chmod(0o700)
        opener = Opener.start(user.pw_name, timeout=1.0)
        try:
            listing = event_files(where, Fence.of([], opener.open))
        finally:
            opener.close()
        mine = event_files(where)  # the collector's own user (root) lists it all
    assert mine.files == [where / "private" / "b.tfevents", where / "public" / "a.tfevents"]
    assert listing.files == [where / "public" / "a.tfevents"], listing.problems
    (problem,) = listing.problems
    assert f"{where / 'private'} cannot be opened as {user.pw_name}: Permission denied" \
        in problem
