"""Fuzz Trie operations against the pure-Python reference (mpt._reference) and a dict model.

The input is a sequence of operations: put (including empty values, which delete), delete, commit and reopen
from the node database, and copy. After every operation the root must equal that of a trie built afresh from
the model (a trie's shape depends only on its keys, so the history of updates must not show); after every
commit and at the end it must equal the reference root. At the end every key reads back, iteration yields the
model in key order, proofs verify, and every copy still holds what it held when it was taken (copies share
nodes copy-on-write).
"""
from mpt import Trie, verify_proof
from mpt.ethereum._reference import trie_root
from mpt.db import MemoryDB

from fuzz_support import FuzzInput, draw_value, run_fuzzer

MAX_LEN = 2048
MAX_OPERATIONS = 80
# Few distinct bytes, so keys share nibbles and every node shape (and every delete collapse) occurs.
KEY_ALPHABET = (0x00, 0x01, 0x10, 0x11, 0x12, 0x21, 0xF0, 0xFF)


def _draw_key(inp: FuzzInput) -> bytes:
    return bytes(inp.choice(KEY_ALPHABET) for _ in range(inp.int_below(5)))


def _fresh_root(model) -> bytes:
    # The compiled trie built in one go: far cheaper than the reference, which is checked less often.
    fresh = Trie()
    for key, value in model.items():
        fresh[key] = value
    return fresh.hash()


def test_one_input(data: bytes) -> None:
    inp = FuzzInput(data)
    db = MemoryDB()
    trie, model = Trie(db), {}
    touched = set()
    snapshots = []
    for _ in range(MAX_OPERATIONS):
        if inp.exhausted:
            break
        operation = inp.int_below(10)
        if operation <= 5:
            key = _draw_key(inp)
            value = b"" if operation == 5 else draw_value(inp)
            trie.update(key, value)
            if value:
                model[key] = value
            else:
                model.pop(key, None)
            touched.add(key)
        elif operation <= 7:
            key = _draw_key(inp)
            trie.delete(key)
            model.pop(key, None)
            touched.add(key)
        elif operation == 8:
            root = trie.commit()
            assert root == trie_root(model), "committed root differs from the reference"
            trie = Trie(db, root)
        else:
            snapshots.append((trie.copy(), dict(model)))
        assert trie.hash() == _fresh_root(model), "root depends on the update history after %r" % (operation,)

    root = trie.hash()
    assert root == trie_root(model), "root differs from the reference"
    for key in touched:
        assert trie.get(key) == model.get(key), "get(%r) disagrees with the model" % (key,)
        assert verify_proof(root, key, trie.prove(key)) == model.get(key), "proof of %r disagrees" % (key,)
    assert list(trie.items()) == sorted(model.items()), "iteration disagrees with the model"
    for copy, held in snapshots:
        assert copy.hash() == _fresh_root(held), "a copy changed after it was taken"
        assert list(copy.items()) == sorted(held.items())


if __name__ == "__main__":
    run_fuzzer(test_one_input, max_len=MAX_LEN)
