"""Write the seed corpus of every fuzz target into fuzz/corpus/<target>/ (deterministic: same files each run).

    python fuzz/make_corpus.py            # rewrite fuzz/corpus/ (removes files it did not write)
    python fuzz/make_corpus.py --check    # exit 1 if the committed corpus differs from what it would write

Seeds are small and chosen by hand: canonical and near-canonical RLP, every node shape and the classic
malformations, real proofs, range proofs and eth_getProof responses (in the harnesses' hostile input format),
and fixed pseudo-random inputs for the structured modes, which turn any bytes into a real scenario.
"""
import argparse
import json
import random
import sys
from pathlib import Path
from typing import Dict

FUZZ_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(FUZZ_DIR))

from mpt import SecureTrie, Trie, keccak256, rlp  # noqa: E402
from mpt.ethereum.eip1186 import get_proof  # noqa: E402

import fuzz_eip1186  # noqa: E402
import fuzz_iavl_import  # noqa: E402  (the seeds name its edits by their index in EDITS)
import fuzz_iavl_node  # noqa: E402, F401  (imported here so the seeds and the harness agree on the format byte)
import fuzz_proof  # noqa: E402
import fuzz_range_proof  # noqa: E402
from fuzz_support import MAX_DECODE_DEPTH, TARGETS, InputBuilder  # noqa: E402

CORPUS_DIR = FUZZ_DIR / "corpus"


def nested_lists(depth: int) -> bytes:
    """depth empty lists, each inside the next: [[[...]]]. Headers by hand: rlp.encode refuses to nest past
    the decoder's cap, and the deepest seed is one level past it."""
    encoding = b"\xc0"
    for _ in range(depth - 1):
        n = len(encoding)
        if n < 56:
            encoding = bytes([0xC0 + n]) + encoding
        else:
            length = n.to_bytes((n.bit_length() + 7) // 8, "big")
            encoding = bytes([0xF7 + len(length)]) + length + encoding
    return encoding


def sample_trie(seed: int, entries: int, key_length: int = 0) -> Trie:
    """A trie of random keys (of key_length bytes, or 1 to 5) with values around the 32-byte embedding line."""
    rng = random.Random(seed)
    trie = Trie()
    for _ in range(entries):
        key = rng.randbytes(key_length or rng.randint(1, 5))
        trie[key] = rng.randbytes(rng.choice((1, 3, 20, 31, 40, 90)))
    return trie


def structured_seeds(prefix: str, count: int, seed: int, length: int) -> Dict[str, bytes]:
    """Pseudo-random inputs whose first byte is even: the harnesses' real-scenario mode."""
    rng = random.Random(seed)
    return {"%s-%02d" % (prefix, i): bytes([2 * rng.randrange(128)]) + rng.randbytes(length)
            for i in range(count)}


def rlp_seeds() -> Dict[str, bytes]:
    real_node = next(blob for _, _, blob in sample_trie(1, 50).node_iter())
    return {
        "byte-00": b"\x00",
        "byte-7f": b"\x7f",
        "empty-string": b"\x80",
        "empty-list": b"\xc0",
        "string-55": b"\xb7" + b"a" * 55,
        "string-56": b"\xb8\x38" + b"a" * 56,
        "list-56": b"\xf8\x38" + b"\x01" * 56,
        "noncanonical-single-byte": b"\x81\x05",
        "noncanonical-long-form": b"\xb8\x05hello",
        "length-leading-zero": b"\xb9\x00\x38" + b"a" * 56,
        "declared-2^64-1-string": b"\xbf" + b"\xff" * 8 + b"\x00" * 8,
        "declared-2^63-list": b"\xff\x80" + b"\x00" * 7 + b"\x00" * 8,
        "declared-4GiB-string": b"\xbb\xff\xff\xff\xff" + b"\x00" * 8,
        "truncated-list": b"\xc5\x83abc",
        "trailing-byte": b"\x83abc\x00",
        "nested-mixed": rlp.encode([b"", [b"\x01", [b"abc", []]], b"\xff" * 40]),
        "account": rlp.encode([7, 10**18, b"\x11" * 32, b"\x22" * 32]),
        "nested-64": nested_lists(64),
        "nested-at-cap": nested_lists(MAX_DECODE_DEPTH),
        "nested-past-cap": nested_lists(MAX_DECODE_DEPTH + 1),
        "trie-root-node": real_node,
        "many-items": rlp.encode([bytes([i % 128]) for i in range(300)]),
    }


def node_seeds() -> Dict[str, bytes]:
    seeds = {}
    trie = sample_trie(2, 60)
    for i, (_, _, blob) in enumerate(trie.node_iter()):
        if i >= 16:
            break
        seeds["real-%02d" % i] = blob
    embedded_leaf = [b"\x33", b"v"]
    seeds.update({
        "leaf-empty-path": rlp.encode([b"\x20", b"value"]),
        "leaf-odd": rlp.encode([b"\x31\x23", b"value"]),
        "extension-embedded-leaf": rlp.encode([b"\x11", embedded_leaf]),
        "extension-embedded-extension": rlp.encode([b"\x11", [b"\x12", [b"\x33", b"v"]]]),
        "extension-hash": rlp.encode([b"\x00\x12", b"\xaa" * 32]),
        "branch-embedded-and-hash": rlp.encode([embedded_leaf, b"\xbb" * 32] + [b""] * 14 + [b"val"]),
        "compact-flag-4": rlp.encode([b"\x40", b"v"]),
        "compact-nonzero-pad": rlp.encode([b"\x25", b"v"]),
        "compact-empty": rlp.encode([b"", b"\xaa" * 32]),
        "extension-without-child": rlp.encode([b"\x11", b""]),
        "leaf-list-value": rlp.encode([b"\x20", [b"v"]]),
        "leaf-empty-value": rlp.encode([b"\x20", b""]),
        "branch-value-list": rlp.encode([b""] * 16 + [[b"v"]]),
        "branch-31-byte-ref": rlp.encode([b"\xcc" * 31] + [b""] * 16),
        "embedded-32-bytes": rlp.encode([b"\x11", [b"\x20", b"v" * 29]]),
        "three-items": rlp.encode([b"\x20", b"v", b"w"]),
    })
    return seeds


def proof_seeds() -> Dict[str, bytes]:
    seeds = structured_seeds("real", 16, 3, 300)
    trie = sample_trie(4, 40)
    keys = list(trie.keys())
    root = trie.hash()
    for i, key in enumerate(keys[:8]):
        seeds["hostile-present-%d" % i] = fuzz_proof.hostile_input(key, trie.prove(key), root)
    for i, key in enumerate((b"", b"\x00", b"\xff" * 5, b"absent key")):
        seeds["hostile-absent-%d" % i] = fuzz_proof.hostile_input(key, trie.prove(key), root)
    shallow = rlp.encode([b"\x11", [b"\x33", b"v"]])
    seeds["hostile-extension-over-leaf"] = fuzz_proof.hostile_input(b"\x13", [shallow])
    seeds["hostile-branch-value"] = fuzz_proof.hostile_input(b"", [rlp.encode([b""] * 16 + [b"v"])])
    return seeds


def range_proof_seeds() -> Dict[str, bytes]:
    seeds = structured_seeds("real", 16, 5, 400)
    trie = sample_trie(6, 60, key_length=2)
    keys = list(trie.keys())
    root = trie.hash()
    for i, (start, count) in enumerate(((0, 5), (10, 1), (20, 8), (len(keys) - 3, 3))):
        chosen = keys[start:start + count]
        proof = trie.prove_many([chosen[0], chosen[-1]])
        seeds["hostile-range-%d" % i] = fuzz_range_proof.hostile_input(
            chosen[0], chosen, [trie[k] for k in chosen], proof, root, sort_keys=True)
    small = sample_trie(7, 10, key_length=2)
    seeds["hostile-whole-trie"] = fuzz_range_proof.hostile_input(
        b"", list(small.keys()), list(small.values()), None, small.hash())
    # A root node no real trie has: an extension over an embedded leaf (edge keys on one side of the leaf).
    shallow = rlp.encode([b"\x11", [b"\x33", b"v"]])
    seeds["hostile-extension-over-leaf"] = fuzz_range_proof.hostile_input(
        b"\x10", [b"\x10", b"\x11"], [b"a", b"b"], [shallow], sort_keys=True)
    return seeds


def eip1186_seeds() -> Dict[str, bytes]:
    seeds = structured_seeds("real", 16, 7, 300)
    state, storages = SecureTrie(), {}
    for i in range(1, 6):
        address = bytes([i]) * 20
        storage = SecureTrie()
        for slot in range(i % 4):
            storage.update_storage(slot, 1000 * i + slot)
        storages[address] = storage
        state.update_account(address, i, 10**15 * i, storage_root=storage.hash(), code_hash=keccak256(b"%d" % i))
    root = state.hash()
    for i in (1, 3, 5):
        address = bytes([i]) * 20
        response = get_proof(state, address, slots=[0, 1, 9], storage_trie=storages[address])
        seeds["json-account-%d" % i] = fuzz_eip1186.json_input(root, response)
    absent = get_proof(state, b"\xee" * 20, slots=[1])
    seeds["json-absent-account"] = fuzz_eip1186.json_input(root, absent)
    seeds["json-not-an-object"] = fuzz_eip1186.json_input(root, ["0x00"])
    seeds["json-empty-object"] = fuzz_eip1186.json_input(root, {})
    malformed = json.loads(json.dumps(absent))
    malformed["nonce"] = "0x" + "f" * 100
    seeds["json-huge-nonce"] = fuzz_eip1186.json_input(root, malformed)
    return seeds


def trie_ops_seeds() -> Dict[str, bytes]:
    rng = random.Random(8)
    return {"ops-%02d" % i: rng.randbytes(rng.choice((40, 200, 600))) for i in range(20)}


def merkle_seeds() -> Dict[str, bytes]:
    from mpt import merkle

    seeds = structured_seeds("real", 12, 6962, 96)
    txs = [b"tx-%d" % i for i in range(5)]
    proof_json = merkle.proofs(txs)[1][2].to_json()
    hostile = {
        "proof-json": json.dumps(proof_json),
        "tx-proof-json": json.dumps(merkle.tx_proof(txs, 3)),
        "tx-rpc-response": json.dumps({"jsonrpc": "2.0", "id": 1, "result": {
            "tx": merkle.tx_proof(txs, 1)["data"], "proof": merkle.tx_proof(txs, 1)}}),
        "too-many-aunts": json.dumps(dict(proof_json, aunts=["A" * 43 + "="] * 101)),
        "negative-index": json.dumps(dict(proof_json, index="-1")),
        "huge-total": json.dumps(dict(proof_json, total="99999999999999999999")),
        "not-json": "{\"total\": ",
        "deep-nesting": "[" * 5000,
    }
    for name, text in hostile.items():
        seeds["hostile-" + name] = b"\x01" + text.encode()
    return seeds


def iavl_node_seeds() -> Dict[str, bytes]:
    """Leaves and inner nodes in the three formats (first byte: 0 legacy, 1 v1, 2 vbyte; v1 keyed (7, 3)), and
    their classic malformations."""
    from mpt.iavl import InnerNode, LeafNode

    left = LeafNode(b"a", b"1", 7)
    right = LeafNode(b"b" * 40, b"2" * 200, 7)
    nodes = {
        "leaf": LeafNode(b"key", b"value", 7),
        "leaf-empty": LeafNode(b"", b"", 7),
        "leaf-long": right,
        "inner": InnerNode(b"b" * 40, 1, 2, 7, left.hash, right.hash, left_node_key=fuzz_iavl_node.NODE_KEY,
                           right_node_key=right.hash),
        "inner-tall": InnerNode(b"k", 127, 2**62, 7, bytes(32), b"\xff" * 32, left_node_key=bytes(12),
                                right_node_key=b"\x7f" + bytes(11)),
    }
    seeds: Dict[str, bytes] = {}
    for name, node in nodes.items():
        for tag, fmt in enumerate(fuzz_iavl_node.FORMATS):
            data = node.to_bytes(fmt)
            seeds["%s-%s" % (fmt, name)] = bytes([tag]) + data
            seeds["%s-%s-cut" % (fmt, name)] = bytes([tag]) + data[: len(data) // 2]
            seeds["%s-%s-trailing" % (fmt, name)] = bytes([tag]) + data + b"\x00"
    seeds["legacy-overlong-varint"] = b"\x00" + b"\x80" * 10 + b"\x01"
    seeds["v1-non-canonical-varint"] = b"\x01\x80\x00\x02\x00\x00"
    seeds["vbyte-control-promises-too-much"] = b"\x02\x00\xff\x01\x02"
    seeds["vbyte-negative-height"] = b"\x02\xff\x00\x01\x01\x00\x00"
    return seeds


def iavl_import_seeds() -> Dict[str, bytes]:
    """Trees of three versions exported and imported as they are, then with each kind of edit, and a few streams
    no tree exports (FuzzInput layout: keys with their versions, edits, the import version)."""
    keys = [(b"k%02d" % i, i % 3) for i in range(20)] + [(b"k%02d" % i, 2) for i in range(0, 20, 4)]

    def scenario(keys, edits=(), version_choice=1):
        b = InputBuilder().byte(len(keys))
        for key, v in keys:
            b.chunk(key).byte(v)
        b.byte(len(edits))
        for edit in edits:
            b.byte(fuzz_iavl_import.EDITS.index(edit[0]))
            for part in edit[1:]:
                b.chunk(part) if isinstance(part, bytes) else b.byte(part)
        return b.byte(version_choice).build()

    return {
        "empty": scenario([]),
        "one-leaf": scenario([(b"a", 0)]),
        "three-versions": scenario(keys),
        "import-as-version-4": scenario(keys, version_choice=2),
        "import-as-version-2": scenario(keys, version_choice=0),
        "edit-key": scenario(keys, [("key", 3, b"k00")]),
        "edit-leaf-value": scenario(keys, [("value", 0, 0, b"new")]),
        "edit-value-none": scenario(keys, [("value", 0, 1)]),
        "edit-version": scenario(keys, [("version", 5, 5)]),
        "edit-height": scenario(keys, [("height", 2, 3)]),
        "drop-root": scenario(keys, [("drop", 39)]),
        "duplicate-leaf": scenario(keys, [("duplicate", 0)]),
        "move-leaf": scenario(keys, [("move", 0, 5)]),
        "four-edits": scenario(keys, [("drop", 1), ("duplicate", 1), ("height", 4, 0), ("move", 7, 2)]),
    }


def abci_query_seeds() -> Dict[str, bytes]:
    """Real answers and MerkleProofs (untampered and tampered) and hostile JSON / bytes (first byte: the mode)."""
    import fuzz_abci_query as h

    seeds = {"real-present": b"\x00\x01", "real-absent": b"\x00\x00", "ibc-membership": b"\x01\x00",
             "ibc-non-membership": b"\x01\x01"}
    seeds.update({"tampered-%02d" % i: b"\x00" + data[1:] for i, data in
                  enumerate(structured_seeds("t", 8, 2323, 24).values())})
    seeds.update({"ibc-tampered-%02d" % i: b"\x01" + data[1:] for i, data in
                  enumerate(structured_seeds("t", 6, 2324, 16).values())})
    present = json.dumps(h.ANSWERS["present.json"])
    hostile = {
        "present": present,
        "absent-response-only": json.dumps(h.ANSWERS["absent.json"]["result"]["response"]),
        "no-proof-ops": present.replace('"proofOps"', '"proofOpz"'),
        "not-json": "{\"result\": ",
        "deep-nesting": "[" * 5000,
        "error-envelope": json.dumps({"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "x"}}),
    }
    for name, text in hostile.items():
        seeds["hostile-" + name] = b"\x02" + text.encode()
    proof, path, value = h.IBC["membership"]
    seeds["hostile-ibc-real"] = InputBuilder().byte(3).chunk(path[1]).byte(1).chunk(value).raw(proof).build()
    seeds["hostile-ibc-huge-length"] = (InputBuilder().byte(3).chunk(b"k").byte(0)
                                        .raw(b"\x0a\xff\xff\xff\x0f").build())
    seeds["hostile-ibc-empty"] = InputBuilder().byte(3).chunk(b"").byte(0).build()
    return seeds


def ics23_seeds() -> Dict[str, bytes]:
    """Real-tree scenarios (even first byte), and the proofs of cosmos/ics23's testdata and the iavl_store_A
    fixture as hostile input (odd first byte, then 0 for IAVL_SPEC or 1 for TENDERMINT_SPEC), whole and cut."""
    seeds = structured_seeds("real", 12, 23, 120)
    vectors = FUZZ_DIR.parent / "tests" / "vectors" / "cosmos"
    for path in sorted((vectors / "ics23").glob("*/*.json")):
        proof = bytes.fromhex(json.loads(path.read_text())["proof"])
        spec = b"\x00" if path.parent.name == "iavl" else b"\x01"
        name = "%s-%s" % (path.parent.name, path.stem)
        seeds[name] = b"\x01" + spec + proof
        seeds[name + "-cut"] = b"\x01" + spec + proof[: len(proof) // 2]
    store = json.loads((vectors / "iavl_store_A" / "iavl_store.json").read_text())
    for group in ("membership_proofs", "nonmembership_proofs", "empty_value_membership_proofs"):
        seeds["store-" + group] = b"\x01\x00" + bytes.fromhex(store[group][0]["commitment_proof_hex"])
    seeds["hostile-deep-groups"] = b"\x01\x00" + b"\x7b" * 100
    seeds["hostile-long-varint"] = b"\x01\x00\x0a" + b"\x80" * 11
    seeds["hostile-many-ops"] = b"\x01\x00\x0a\xd2\x0f" + b"\x22\x00" * 1001
    return seeds


SEEDS = {
    "rlp": rlp_seeds,
    "node": node_seeds,
    "proof": proof_seeds,
    "range_proof": range_proof_seeds,
    "eip1186": eip1186_seeds,
    "trie_ops": trie_ops_seeds,
    "merkle": merkle_seeds,
    "iavl_node": iavl_node_seeds,
    "iavl_import": iavl_import_seeds,
    "ics23": ics23_seeds,
    "abci_query": abci_query_seeds,
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare with the committed corpus, write nothing")
    args = parser.parse_args()
    differences = []
    for target in TARGETS:
        directory = CORPUS_DIR / target
        wanted = SEEDS[target]()
        present = {p.name: p.read_bytes() for p in directory.iterdir()} if directory.is_dir() else {}
        if present == wanted:
            continue
        differences.append(target)
        if args.check:
            continue
        directory.mkdir(parents=True, exist_ok=True)
        for name in set(present) - set(wanted):
            (directory / name).unlink()
        for name, data in wanted.items():
            (directory / name).write_bytes(data)
    if args.check:
        for target in differences:
            print("fuzz/corpus/%s differs from what make_corpus.py writes" % target)
        return 1 if differences else 0
    for target in TARGETS:
        files = list((CORPUS_DIR / target).iterdir())
        print("%-12s %3d files %7d bytes" % (target, len(files), sum(p.stat().st_size for p in files)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
