"""A bisect's state file: what it keeps comes back as it was; a forged, cut or oversized one
is refused in one line that names it and says --fresh; two holders of one repository's
state are refused."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from hotloop.analysis.bisection import Bisection
from hotloop.errors import HotloopError
from hotloop.run.bisect import MAX_STATE, BisectDir, BisectState
from hotloop.run.revisions import Revision

REVS = [Revision(f"{i:040x}", f"Revision {i}") for i in range(1, 6)]


def state() -> BisectState:
    b = Bisection([r.sha for r in REVS])
    b.next()
    b.add(100.0, 125.0)                 # one round of the endpoints kept
    return BisectState("/repo", ["a..b", "chain", "--runs", "5"], REVS, b.to_dict(), 12.5,
                       {"0": ["/s/x"]})


def test_a_state_comes_back_as_it_was_kept(tmp_path: Path) -> None:
    d = BisectDir(tmp_path / "repo", tmp_path / "bisect")
    d.hold()
    try:
        assert d.load() is None
        st = state()
        d.save(st)
        back = d.load()
        assert back is not None and back.to_json() == st.to_json()
        assert Bisection.from_dict(back.decision).next() == Bisection.from_dict(
            st.decision).next()
    finally:
        d.release()


@pytest.mark.parametrize("forge", [
    lambda doc: "not json at all",
    lambda doc: json.dumps({**doc, "format": 99}),
    lambda doc: json.dumps({**doc, "revisions": []}),
    lambda doc: json.dumps({**doc, "revisions": doc["revisions"][:1]}),
    lambda doc: json.dumps({**doc, "revisions": [{"sha": "HEAD~1", "subject": ""}] * 2}),
    lambda doc: json.dumps({**doc, "argv": "a..b chain"}),
    lambda doc: json.dumps({**doc, "seconds": -1}),
    lambda doc: json.dumps({**doc, "decision": {}}),
    lambda doc: json.dumps({**doc, "revisions": doc["revisions"][::-1]}),   # other revisions
    lambda doc: json.dumps({**doc, "decision": {**doc["decision"], "steps": [
        {**doc["decision"]["steps"][0], "verdict": "differ"}]}}),     # a verdict no round gives
], ids=["garbage", "format", "no-revisions", "one-revision", "not-hashes", "argv", "seconds",
        "no-decision", "other-revisions", "forged-verdict"])
def test_a_forged_state_is_refused_in_one_line(tmp_path: Path, forge) -> None:
    d = BisectDir(tmp_path / "repo", tmp_path / "bisect")
    d.hold()
    try:
        d.save(state())
        d.state_file.write_text(forge(json.loads(d.state_file.read_text())))
        with pytest.raises(HotloopError) as e:
            d.load()
        said = str(e.value)
        assert "\n" not in said and str(d.state_file) in said and "--fresh" in said, said
    finally:
        d.release()


def test_an_oversized_state_is_not_read(tmp_path: Path) -> None:
    d = BisectDir(tmp_path / "repo", tmp_path / "bisect")
    d.hold()
    try:
        d.state_file.write_bytes(b" " * (MAX_STATE + 1))
        with pytest.raises(HotloopError, match="--fresh"):
            d.load()
    finally:
        d.release()


def test_one_holder_of_a_repositorys_state_at_a_time(tmp_path: Path) -> None:
    first, second = (BisectDir(tmp_path / "repo", tmp_path / "bisect") for _ in range(2))
    first.hold()
    try:
        with pytest.raises(HotloopError, match="another hotloop is bisecting"):
            second.hold()
    finally:
        first.release()
    second.hold()                       # let go: the next one may
    second.release()
