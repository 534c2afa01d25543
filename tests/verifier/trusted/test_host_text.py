"""Host paths out of what a verdict says (verifier/trusted/host_text.py): the build cache, the package folder
and $HOME become placeholders, longest first, whole path components only, everywhere in the details."""
from pathlib import Path

from evokernel.verifier.trusted.host_text import HostText


def test_prefixes_become_placeholders(tmp_path):
    home = tmp_path / "home" / "ann"
    cache = home / ".cache" / "evokernel"
    pkg = tmp_path / "src" / "evokernel-checkout"
    h = HostText(cache, home=str(home), package_root=pkg)
    text = (f"{cache}/cpp/ab12/kernel.cpp:3: error\n{pkg}/verifier/worker.py line 4\n{home}/notes.txt\n"
            f"{home}x/other and {cache}2/y stay")
    out = h.text(text)
    assert out.splitlines()[:3] == ["<cache>/cpp/ab12/kernel.cpp:3: error", "<evokernel>/verifier/worker.py line 4",
                                    "~/notes.txt"]
    assert f"~x/other" not in out and f"{home}x/other" in out  # not a path component of $HOME
    assert "<cache>2/y" not in out and f"~/.cache/evokernel2/y" in out  # the cache's sibling is only under $HOME
    assert str(home) not in out.replace(f"{home}x", "")


def test_symlinked_forms_are_scrubbed_too(tmp_path):
    real = tmp_path / "real-cache"
    real.mkdir()
    link = tmp_path / "link-cache"
    link.symlink_to(real)
    h = HostText(link, home="", package_root=tmp_path / "nowhere")
    assert h.text(f"{real}/a and {link}/b") == "<cache>/a and <cache>/b"


def test_details_are_scrubbed_everywhere_and_other_values_kept(tmp_path):
    h = HostText(tmp_path / "c", home="/home/bob", package_root=tmp_path / "p")
    details = {"error": "/home/bob/x", "nested": [{"f": f"{tmp_path}/c/k.cpp"}, ("/home/bob",)], "n": 3,
               "ok": True, "none": None, "/home/bob/key": 1.5}
    assert h.value(details) == {"error": "~/x", "nested": [{"f": "<cache>/k.cpp"}, ("~",)], "n": 3, "ok": True,
                                "none": None, "~/key": 1.5}


def test_root_and_empty_prefixes_are_ignored():
    h = HostText("/", home="/", package_root=Path("/"))
    assert h.text("/usr/bin/g++ and /tmp/x") == "/usr/bin/g++ and /tmp/x"


def test_control_characters_a_candidate_prints_are_shown_escaped(tmp_path):
    # red-team round 2: NUL, a terminal's clear-screen and a forged "FEASIBLE" block reached the feedback verbatim
    h = HostText(tmp_path / "cache", home="", package_root=tmp_path / "nowhere")
    out = h.text("junk\x00\x1b[2J\rFEASIBLE 40.0x\nline\ttab")
    assert out == "junk\\x00\\x1b[2J\\x0dFEASIBLE 40.0x\nline\ttab"
    assert h.value({"stderr": "\x07bell"}) == {"stderr": "\\x07bell"}


def test_lone_surrogates_are_shown_escaped_so_the_feedback_encodes(tmp_path):
    # red-team round 3 (rt3_lone_surrogate_feedback): raise ValueError("\ud800") in forward; JSON carried the lone
    # surrogate into the verdict, and `evokernel verify` died printing it (UnicodeEncodeError)
    h = HostText(tmp_path / "cache", home="", package_root=tmp_path / "nowhere")
    out = h.text("forward failed: ValueError: \ud800 and \udfff; kept: é \U0001F600")
    assert out == "forward failed: ValueError: \\ud800 and \\udfff; kept: é \U0001F600"
    out.encode("utf-8")
    assert h.value({"error": ["\udc80"]}) == {"error": ["\\udc80"]}
