"""mpt.runtime: the process-wide settings every tree family shares, and the environment knobs that set them.

Each knob is read once, when mpt is imported, so the knobs are tested in fresh interpreters."""
import os
import subprocess
import sys
import warnings

import pytest

import mpt.core.runtime as runtime

KNOBS = ("MPT_HASH_THREADS", "MPT_KECCAK_BACKEND", "MPT_SHA256_BACKEND")


def run_python(code, **env):
    """Run code in a fresh interpreter with the knobs given (the others unset): (stdout, stderr)."""
    full = {k: v for k, v in os.environ.items() if k not in KNOBS}
    full.update(env)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip(), proc.stderr.strip()


def runtime_warnings(stderr):
    return [line.split("RuntimeWarning: ", 1)[1] for line in stderr.splitlines() if "RuntimeWarning: " in line]


def test_no_knob_no_warning():
    out, err = run_python("import mpt, mpt.iavl; from mpt.core.runtime import get_hash_threads; "
                          "print(get_hash_threads())")
    assert out == "1" and err == ""


@pytest.mark.parametrize("value, used, warning", [
    ("2", "2", None),
    (" 3 ", "3", None),
    ("abc", "1", "MPT_HASH_THREADS='abc' is not a whole number (0 means every core, up to 8); using 1 hashing thread"),
    ("1_0", "1", "MPT_HASH_THREADS='1_0' is not a whole number (0 means every core, up to 8); using 1 hashing thread"),
    ("-1", "1", "MPT_HASH_THREADS='-1' is negative (0 means every core, up to 8); using 1 hashing thread"),
    ("100000", "256", "MPT_HASH_THREADS='100000' is above 256; using 256 hashing threads"),
])
def test_hash_threads_knob(value, used, warning):
    out, err = run_python("from mpt.core.runtime import get_hash_threads; print(get_hash_threads())",
                          MPT_HASH_THREADS=value)
    assert out == used
    assert runtime_warnings(err) == ([warning] if warning else [])


def test_hash_threads_zero_means_every_core_up_to_8():
    out, _ = run_python("from mpt.core.runtime import get_hash_threads; print(get_hash_threads())",
                        MPT_HASH_THREADS="0")
    assert out == str(min(os.cpu_count() or 1, 8))


def test_keccak_backend_knob_says_what_is_used():
    best = run_python("from mpt.core.runtime import keccak_backend; print(keccak_backend())")[0]
    out, err = run_python("from mpt.core.runtime import keccak_backend; print(keccak_backend())",
                          MPT_KECCAK_BACKEND="bogus")
    assert out == best
    assert runtime_warnings(err) == ["MPT_KECCAK_BACKEND ignored: unknown Keccak backend 'bogus' (known: scalar, avx2, "
                                     "avx512, avx2x8); using %s" % best]
    out, err = run_python("from mpt.core.runtime import keccak_backend; print(keccak_backend())",
                          MPT_KECCAK_BACKEND="scalar")
    assert out == "scalar" and err == ""


@pytest.mark.parametrize("value", ["bogus", "SHANI", " scalar"])
def test_sha256_backend_knob_warns_on_a_name_it_ignores(value):
    out, err = run_python("from mpt.core.runtime import sha256_backend; print(sha256_backend())",
                          MPT_SHA256_BACKEND=value)
    # "auto": SHA-NI or AVX-512 by a timing where the CPU has both (sha256.h), else the fastest it has.
    assert out in ("shani", "avx512", "avx2", "scalar")
    assert runtime_warnings(err) == ["MPT_SHA256_BACKEND ignored: %r is not a SHA-256 backend (known: auto, scalar, "
                                     "avx2, avx512, shani); using %s" % (value, out)]


def test_sha256_backend_knob_is_honoured():
    out, err = run_python("import mpt.merkle; from mpt.core.runtime import sha256_backend; print(sha256_backend())",
                          MPT_SHA256_BACKEND="scalar")
    assert out == "scalar" and err == ""


@pytest.mark.parametrize("name", ["get_hash_threads", "set_hash_threads", "keccak_backends", "keccak_backend",
                                  "set_keccak_backend"])
def test_old_names_in_mpt_hasher_warn_and_still_work(name):
    import mpt.ethereum.hasher

    with pytest.warns(DeprecationWarning, match=r"mpt\.hasher\.%s moved to mpt\.runtime\.%s" % (name, name)):
        moved = getattr(mpt.ethereum.hasher, name)
    assert moved is getattr(runtime, name)
    with pytest.raises(AttributeError):
        mpt.ethereum.hasher.no_such_name  # noqa: B018
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert mpt.ethereum.hasher.keccak256_many([b"abc"])[0] == mpt.keccak256(b"abc")   # not moved: no warning


def test_one_thread_setting_for_every_family():
    """The Ethereum hasher and mpt.merkle read the same setting: set once, both roots stay right."""
    from mpt import Trie, merkle
    from mpt.merkle import _reference as _merkle_reference

    leaves = [bytes([i % 256]) * 40 for i in range(5000)]
    old = runtime.set_hash_threads(2)
    try:
        assert runtime.get_hash_threads() == 2
        with merkle.hashing_threads(2):
            assert merkle.root(leaves) == _merkle_reference.root(leaves)
        t = Trie()
        for i in range(3000):
            t[i.to_bytes(4, "big")] = b"v" * 40
        with_threads = t.hash()
    finally:
        runtime.set_hash_threads(old)
    t2 = Trie()
    for i in range(3000):
        t2[i.to_bytes(4, "big")] = b"v" * 40
    assert t2.hash() == with_threads
    with pytest.raises(ValueError, match="at most 256"):
        runtime.set_hash_threads(257)
