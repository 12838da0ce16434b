"""Score files read by the one decimal kernel (issue 36, "one reader"): rankkit.io.output.read_scores
scans the bytes with rankkit.io.parse.parse_number, as the svmlight, trec run and qrels readers do.
It must take and refuse exactly what the reader before it (Python's float() on each line) took and
refused, give the same doubles bit for bit, and word each refusal in the same one line naming the
file, the line and the token. REFERENCE below is that reader, kept verbatim as the oracle."""

from __future__ import annotations

import random

import numpy as np
import pytest

from rankkit.errors import DataError
from rankkit.io.files import display_name, read_bytes
from rankkit.io.output import _check_score_line, read_scores


def reference_read_scores(path: str) -> np.ndarray:
    """read_scores before the kernel (float() of each line), verbatim but for its name."""
    name = display_name(path)
    raw = read_bytes(path).tobytes()
    lines = raw.splitlines()  # bytes.splitlines: LF, CR LF and CR only
    if lines and lines[-1].strip() == b"":
        lines.pop()
    if not lines:
        raise DataError(name, "is empty (expected one score per line)")
    try:  # float() of each line: one number, surrounding white space allowed
        scores = np.array(lines, dtype=np.float64)
    except ValueError:
        scores = None
    if scores is not None and np.all(np.isfinite(scores)) and b"_" not in raw:
        return scores  # (float() takes '1_000'; no tool writes scores that way)
    for i, line in enumerate(lines, start=1):
        _check_score_line(name, i, line)
    return np.array([float(ln) for ln in lines], dtype=np.float64)


# numbers and near-numbers: plain decimals, long significands (%.17g), exponents, signs, the
# edges of the double range, nan/inf spellings, and what float() refuses
TOKENS = [
    "0", "-0", "+0.5", "3.", ".25", "-.75", "0.000001", "6.931275", "0.1", "-4.35", "1.00000000000000001",
    "123456789012345678", "1234567890123456789", "9007199254740993", "0.000000000000000000123",
    "00000000000000000001.5", "1e5", "1E-5", "-2.5e+3", "-0.0", "0.12345678901234567", "-3.4028234663852886e+38",
    "1e-320", "4.9406564584124654e-324", "2.4703282292062328e-324", "2.4703282292062327e-324",
    "1.7976931348623157e308", "1.7976931348623158e308", "1.7976931348623159e308", "1e400", "-1e400", "1e-400",
    "0e999999", "-0e-999999", "5.e3", "123456789012345678901234567890", "0.1234567890123456789e-5",
    "12345678901234567e300", "9" * 30 + "e-30", "1e+0022", "1e22", "1e23", "8.98846567431158e307",
    "nan", "NaN", "-nan", "+inf", "-Infinity", "iNfInItY", "infinit", "nan1", "inf.0",
    "1_000", "1__0", "_1", "1e", "e5", ".", "-", "+", "+-1", "--1", "1e+-5", "1.5.2", "0x10", "1d5", "1,5",
    "\uff15", "\u0661", "1.5\x00", "\x1c1",
]
SPACES = [" ", "\t", "\x0b", "\x0c", "  \t"]
ENDS = ["\n", "\r\n", "\r"]


def _outcome(read, path):
    try:
        values = read(path)
    except DataError as exc:
        return ("error", str(exc), exc.line)
    return ("values", np.asarray(values, dtype=np.float64).view(np.int64).tolist())


def _random_file(rng: random.Random) -> bytes:
    lines = []
    for _ in range(rng.randint(0, 4)):
        kind = rng.random()
        if kind < 0.08:
            text = rng.choice(["", " ", "\t "])  # a blank line
        elif kind < 0.16:
            text = f"{rng.choice(TOKENS)}{rng.choice(SPACES)}{rng.choice(TOKENS)}"  # two fields
        elif kind < 0.2:
            text = rng.choice(["7 Q0 doc 1 0.5 tag", "0 qid:1 1:0.5", "qid:4", "1 1:0.5 2:1"])
        else:
            text = rng.choice(TOKENS)
            if rng.random() < 0.4:
                text = rng.choice(SPACES) + text
            if rng.random() < 0.4:
                text += rng.choice(SPACES)
        lines.append(text + rng.choice(ENDS))
    if lines and rng.random() < 0.3:  # no line end after the last line
        lines[-1] = lines[-1].rstrip("\r\n")
    if rng.random() < 0.15:
        lines.append(rng.choice(["", " ", "\n", " \n", "\n\n"]))
    return "".join(lines).encode("utf-8")


def test_every_token_alone_reads_as_before(tmp_path):
    """Each token on its own line: the same double (bits: -0.0, subnormals, the rounding edge of the
    largest double) or the same refusal as float() on the line."""
    path = str(tmp_path / "s")
    for token in TOKENS:
        for text in (token + "\n", f" {token}\t\r\n", f"1\n{token}"):
            with open(path, "wb") as fh:
                fh.write(text.encode("utf-8"))
            assert _outcome(read_scores, path) == _outcome(reference_read_scores, path), repr(text)


def test_random_score_files_read_as_before(tmp_path):
    """Files of blank lines, two fields, data and run lines, every token with white space around it,
    LF, CR LF and CR line ends, a last line with or without its end: the same values or the same
    first error (file, line, message) as the reader before the kernel."""
    rng = random.Random(36)
    path = str(tmp_path / "s")
    seen = set()
    for _ in range(3000):
        data = _random_file(rng)
        with open(path, "wb") as fh:
            fh.write(data)
        got, want = _outcome(read_scores, path), _outcome(reference_read_scores, path)
        assert got == want, repr(data)
        seen.add(want[0] if want[0] == "values" else want[1].split(": ", 1)[1].split(" ")[0])
    assert "values" in seen and len(seen) > 5  # the draws reach both values and several refusals


def test_the_rounding_of_long_literals_is_floats(tmp_path):
    """%.17g output (what `rankkit predict` writes: most of it past the kernel's exact fast stage)
    and random 17-to-25-digit literals read back as float() reads them, bit for bit."""
    rng = np.random.default_rng(36)
    values = np.concatenate([rng.standard_normal(2000) * 10.0 ** rng.integers(-30, 30, 2000),
                             rng.uniform(-1, 1, 2000)])
    tokens = ["%.17g" % v for v in values.tolist()]
    tokens += [f"{rng.integers(1, 10)}.{''.join(map(str, rng.integers(0, 10, k)))}e{rng.integers(-300, 300)}"
               for k in rng.integers(16, 24, 2000).tolist()]
    path = tmp_path / "s"
    path.write_text("\n".join(tokens) + "\n")
    got = read_scores(str(path)).view(np.int64)
    assert got.tolist() == np.array([float(t) for t in tokens]).view(np.int64).tolist()
    assert got[: len(values)].tolist() == values.view(np.int64).tolist()  # %.17g round-trips


@pytest.mark.parametrize("where", [0, 1, 2])
def test_the_first_refusal_is_the_one_reported(tmp_path, where):
    """An overflow (the kernel leaves it to the cast) before, at or after another bad line: the error is
    the first line's, as before."""
    lines = ["1.5", "2"]
    lines.insert(where, "1e999")
    lines.insert(2, "1 2")
    path = tmp_path / "s"
    path.write_text("\n".join(lines) + "\n")
    assert _outcome(read_scores, str(path)) == _outcome(reference_read_scores, str(path))
    first = min(lines.index("1e999"), lines.index("1 2")) + 1
    with pytest.raises(DataError) as info:
        read_scores(str(path))
    assert info.value.line == first
