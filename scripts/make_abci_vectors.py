"""Write tests/vectors/cosmos/abci/*.json: abci_query answers (prove=true) in CometBFT's JSON shape, and IBC
MerkleProofs, built from the Go-made IAVL proofs of tests/vectors/cosmos/iavl_store_A/iavl_store.json.

The ics23:iavl op carries a proof exactly as Go iavl made it (``commitment_proof_hex``, against the version 6 root).
The ics23:simple op is mpt.merkle.map_proof over a multistore map whose "bank" (and "ibc") entry is that root,
the other stores' roots being sha256(name) placeholders. Deterministic: re-running gives the same files.

    python scripts/make_abci_vectors.py
"""
import base64
import hashlib
import json
from pathlib import Path

from mpt import merkle

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "tests" / "vectors" / "cosmos" / "iavl_store_A" / "iavl_store.json"
OUT = ROOT / "tests" / "vectors" / "cosmos" / "abci"

# The stores of a Cosmos SDK app (simapp + IBC), sorted; every store but the proven one has a placeholder root.
STORE_NAMES = ["acc", "authz", "bank", "capability", "consensus", "crisis", "distribution", "evidence", "feegrant",
               "gov", "group", "ibc", "mint", "nft", "params", "slashing", "staking", "transfer", "upgrade"]
HEIGHT = 6      # the IAVL version the proofs are against = the block height the query read


def b64(data):
    return None if data is None else base64.b64encode(data).decode("ascii")


def multistore(store_root, proven):
    return {name: (store_root if name in proven else hashlib.sha256(name.encode()).digest())
            for name in STORE_NAMES}


def envelope(key, value, iavl_proof, store, stores):
    simple = merkle.map_proof(stores, store)
    return {
        "jsonrpc": "2.0",
        "id": -1,
        "result": {
            "response": {
                "code": 0,
                "log": "",
                "info": "",
                "index": "0",
                "key": b64(key),
                "value": b64(value),
                "proofOps": {
                    "ops": [
                        {"type": "ics23:iavl", "key": b64(key), "data": b64(iavl_proof)},
                        {"type": "ics23:simple", "key": b64(store.encode()), "data": b64(simple.to_bytes())},
                    ]
                },
                "height": str(HEIGHT),
                "codespace": "",
            }
        },
    }


def merkle_proof_bytes(proofs):
    """ibc-go MerkleProof: repeated CommitmentProof proofs = 1."""
    out = bytearray()
    for p in proofs:
        out.append(0x0A)
        n = len(p)
        while n >= 0x80:
            out.append((n & 0x7F) | 0x80)
            n >>= 7
        out.append(n)
        out += p
    return bytes(out)


def main():
    src = json.loads(SOURCE.read_text())
    store_root = bytes.fromhex(src["latest_root_hex"])
    stores = multistore(store_root, {"bank", "ibc"})
    app_hash = merkle.map_root(stores)
    member = src["membership_proofs"][0]
    absent = src["nonmembership_proofs"][0]
    empty = src["empty_value_membership_proofs"][0]
    files = {
        "present.json": envelope(bytes.fromhex(member["key_hex"]), bytes.fromhex(member["value_hex"]),
                                 bytes.fromhex(member["commitment_proof_hex"]), "bank", stores),
        "absent.json": envelope(bytes.fromhex(absent["key_hex"]), None,
                                bytes.fromhex(absent["commitment_proof_hex"]), "bank", stores),
        # iavl proves the empty value, ics23 refuses it: the answer must not verify.
        "empty_value.json": envelope(bytes.fromhex(empty["key_hex"]), b"",
                                     bytes.fromhex(empty["commitment_proof_hex"]), "bank", stores),
    }
    # The same answer as present.json, as a node of an older CometBFT writes it: result.response only, snake_case.
    only = json.loads(json.dumps(files["present.json"]["result"]["response"]))
    only["proof_ops"] = only.pop("proofOps")
    files["present_response_only.json"] = only

    ibc_simple = merkle.map_proof(stores, "ibc").to_bytes()
    manifest = {
        "app_hash_hex": app_hash.hex(),
        "height": HEIGHT,
        "store_root_hex": store_root.hex(),
        "stores": {name: root.hex() for name, root in stores.items()},
        "queries": {
            "present.json": {"store": "bank", "key_hex": member["key_hex"], "value_hex": member["value_hex"]},
            "present_response_only.json": {"store": "bank", "key_hex": member["key_hex"],
                                           "value_hex": member["value_hex"]},
            "absent.json": {"store": "bank", "key_hex": absent["key_hex"], "value_hex": None},
            "empty_value.json": {"store": "bank", "key_hex": empty["key_hex"], "error": "empty"},
        },
        "ibc": {
            "membership": {
                "path_hex": [b"ibc".hex(), member["key_hex"]],
                "value_hex": member["value_hex"],
                "merkle_proof_hex": merkle_proof_bytes([bytes.fromhex(member["commitment_proof_hex"]),
                                                        ibc_simple]).hex(),
            },
            "non_membership": {
                "path_hex": [b"ibc".hex(), absent["key_hex"]],
                "value_hex": None,
                "merkle_proof_hex": merkle_proof_bytes([bytes.fromhex(absent["commitment_proof_hex"]),
                                                        ibc_simple]).hex(),
            },
        },
    }
    OUT.mkdir(parents=True, exist_ok=True)
    for name, obj in files.items():
        (OUT / name).write_text(json.dumps(obj, indent=2) + "\n")
    (OUT / "vectors.json").write_text(json.dumps(manifest, indent=2) + "\n")


if __name__ == "__main__":
    main()
