"""The tree a deliver-only credential commits to, as ingest checks it: the vectors the
collector's `deliver::tree` tests hold too, every leaf of every tree proven, and each way a
proof can be wrong refused."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.tier import examples
from tuneplane.telemetry.v1.delivery import (
    BadProof,
    Proof,
    audit_path,
    leaf,
    root,
    verify,
)

#: collector/binary/src/deliver/tree.rs holds the same.
SEQUENCES = (1, 2, 3, 5, 8)
ROOT = "ba21db23b74a740ff2ff4ad84cc1a1bef4a0b6d9a0739353b5e65d54ed3a31da"
PROOF_3 = ("3:a6ec687245e2d0980e25276e42dd688c005aea4a2d659d6115afa0770721a218"
           "b4a2e7e0086fb2741555761a120eb41164fe0004af0da13ceaf6cf97125d0c8a"
           "2323cb65a1855078befe47b0a5243099af14652a381372464a8b529688b30712")


def vector_leaves() -> list[bytes]:
    return [leaf(s, f"batch-{s}".encode()) for s in SEQUENCES]


def test_the_shared_vectors() -> None:
    leaves = vector_leaves()
    assert root(leaves).hex() == ROOT
    assert Proof(3, audit_path(leaves, 3)).render() == PROOF_3
    assert leaf(1, b"").hex() == "a9ae94506412b3ba61533db025c85cdf6ab4f4c63f948be10d7183ed22a6ea3f"
    assert verify(Proof.parse(PROOF_3), leaves[3], 5, bytes.fromhex(ROOT))


@settings(max_examples=examples(200), deadline=None)
@given(st.integers(1, 300), st.data())
def test_every_leaf_of_a_tree_is_proven_and_no_other(size: int, data: st.DataObject) -> None:
    leaves = [leaf(s, b"payload %d" % s) for s in range(size)]
    top = root(leaves)
    index = data.draw(st.integers(0, size - 1))
    proof = Proof(index, audit_path(leaves, index))
    assert verify(Proof.parse(proof.render()), leaves[index], size, top)
    assert not verify(proof, leaf(index, b"altered"), size, top)  # other bytes
    if size > 1:
        other = data.draw(st.integers(0, size - 1).filter(lambda i: i != index))
        assert not verify(Proof(other, proof.path), leaves[index], size, top)  # other place
        assert not verify(Proof(index, proof.path[:-1]), leaves[index], size, top)
        assert not verify(Proof(index, (*proof.path, top)), leaves[index], size, top)


def test_a_leaf_binds_its_sequence() -> None:
    assert leaf(1, b"same") != leaf(2, b"same")


@pytest.mark.parametrize("text", ["", "3", ":ab", "x:00", "-1:", "3:zz", "3:" + "ab" * 31,
                                  "123456789:", "1:" + "00" * 32 * 22, "\u00b2:", "\u0661:",
                                  "3:abc", "3:AB" + "00" * 31, " 3:", "3: "])
def test_a_malformed_proof_is_refused(text: str) -> None:
    with pytest.raises(BadProof):
        Proof.parse(text)


def test_an_index_outside_the_tree_is_not_proven() -> None:
    leaves = vector_leaves()
    assert not verify(Proof(5, audit_path(leaves, 4)), leaves[4], 5, root(leaves))
