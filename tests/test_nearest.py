"""A failure no signature knows gets the known cause it is worded nearest to, as a guess that says so."""

from __future__ import annotations

import copy

from conftest import FIXTURES

from diagnose import api, cli_run
from diagnose.engine import nearest
from diagnose.errors import EXIT_UNEXPLAINED
from diagnose.kb.selftest import Case
from diagnose.model import Evidence, is_guess
from diagnose.render import markdown, slack, text


def _without_signatures(kb, rule_id):
    """The KB as it would be if `rule_id` knew none of its wordings: its signals and evidence conditions gone,
    its title, description and examples kept."""
    stripped = copy.copy(kb)
    stripped.rules = dict(kb.rules)
    rule = copy.copy(kb.rules[rule_id])
    rule.signals = []
    rule.conditions = [c for c in rule.conditions if c.get("effect") != "evidence"]
    stripped.rules[rule_id] = rule
    return stripped


def _fixture(name):
    return [str(p) for p in sorted((FIXTURES / name).iterdir()) if p.name != "expected.yaml"]


def test_a_failure_no_signature_matches_gets_the_nearest_known_cause_as_a_guess(kb):
    # a real dmesg (fixtures/gsp-firmware-error--open-gpu-kernel-modules-1230), diagnosed by a KB whose GSP rule
    # has lost every signal: the GSP words of the failing lines still point at it
    stripped = _without_signatures(kb, "gsp-firmware-error")
    diagnosis = api.diagnose(_fixture("gsp-firmware-error--open-gpu-kernel-modules-1230"), kb=stripped)
    assert diagnosis.findings, "the unexplained GSP lines should have been compared with the KB's wordings"
    guess = diagnosis.findings[0]
    assert guess.rule_id == "gsp-firmware-error"
    assert is_guess(guess)
    assert 0.3 <= guess.confidence <= 0.65  # a guess never reads like an established cause (64% of guesses were right)
    assert any("no known signature" in r and "next nearest" in r for r in guess.reasons)
    assert guess.fix and guess.verify  # the rule's own remedy and the step that tells whether the guess was right
    assert diagnosis.unmatched_errors  # the lines stay listed as unexplained: no signature explains them
    assert "a guess" in text.render(diagnosis).splitlines()[0]
    assert "a guess" in markdown.render(diagnosis)
    assert "(a guess)" in slack.message(diagnosis)["text"]
    # no known cause matched: the exit code says "errors no rule explains" (3), not "a cause found" (1)
    assert cli_run.exit_code(diagnosis) == EXIT_UNEXPLAINED


def test_with_its_signatures_the_same_log_is_named_by_them_not_guessed(kb):
    diagnosis = api.diagnose(_fixture("gsp-firmware-error--open-gpu-kernel-modules-1230"), kb=kb)
    assert diagnosis.findings[0].rule_id == "gsp-firmware-error"
    assert not is_guess(diagnosis.findings[0])
    assert diagnosis.findings[0].confidence > 0.5


def test_a_rule_the_evidence_was_weighed_for_and_rejected_is_never_guessed(kb):
    line = Evidence("dmesg", 3, "NVRM: GPU0 kgspInitRm_IMPL: Error preparing GSP-RM image", "error", "dmesg")
    assert nearest.nearest([line], kb, set()) is not None
    guess = nearest.nearest([line], kb, {"gsp-firmware-error"})
    assert guess is None or guess.rule_id != "gsp-firmware-error"


def test_state_lines_are_not_failures_and_give_no_guess(kb):
    state = [
        Evidence("nvidia-smi-q", 40, "        Uncorrectable Error                     : 0", "error", "nvidia-smi-q"),
        Evidence("pip", 3, "pytest-timeout==2.5.0", "error", "pip-freeze"),
        Evidence("log", 9, "vm:618:618 [0] NCCL INFO Failed to initialize NET plugin IB", "error", "server-log"),
        # a warning a healthy multi-node job prints (an HPC site's documented PyTorch run)
        Evidence("log", 1, "[W socket.cpp:697] [c10d] The client socket cannot be initialized to connect to "
                 "[node1.example.org]:3442 (errno: 97 - Address family not supported by protocol).", "error", "server-log"),
    ]
    assert nearest.nearest(state, kb, set()) is None


def test_a_line_like_one_the_kb_says_is_not_the_cause_vetoes_that_cause(kb):
    # every rule's no_match examples are lines the KB says are not that rule: none of them may be guessed as it
    wrong = []
    for rid, rule in kb.rules.items():
        for example in rule.examples.get("no_match", []):
            guess = nearest.nearest([Evidence("log", 1, example, "error", "server-log")], kb, set())
            if guess and guess.rule_id == rid:
                wrong.append((rid, example))
    assert not wrong


def test_healthy_and_near_miss_fixtures_get_no_guess(kb):
    quiet = [Case(p.parent, {"healthy": True}) for p in sorted(FIXTURES.rglob("expected.yaml"))
             if "healthy: true" in p.read_text(encoding="utf-8")]
    assert len(quiet) > 50
    guessed = [(c.name, f.rule_id) for c in quiet for f in api.diagnose(c.artifacts(), kb=kb).findings
               if is_guess(f)]
    assert not guessed


def test_a_guess_is_not_drawn_from_log_prefixes_and_frames(kb):
    # vLLM's EngineCore excerpt cut inside its traceback (vllm-project/vllm#27508): the words the lines share with
    # the KB are the process tag, the logger's place and the frames' code, which say nothing of the cause
    prefix = "(EngineCore_DP0 pid=6880) ERROR 10-31 15:07:50 [core.py:708] "
    text = "".join(prefix + line + "\n" for line in (
        "EngineCore failed to start.", "Traceback (most recent call last):",
        '  File "/opt/conda/envs/vllm_env/lib/python3.13/site-packages/vllm/v1/engine/core.py", line 699, '
        'in run_engine_core',
        "    engine_core = EngineCoreProc(*args, **kwargs)"))
    diagnosis = api.diagnose_texts([("error.log", text)], kb=kb)
    assert not any(is_guess(f) for f in diagnosis.findings)


def test_how_a_process_died_is_not_a_wording_to_guess_from(kb):
    # an MXNet crash (apache/mxnet#17837): the C++ runtime's terminate line and the shell's segfault say how it
    # died; an NVLink example that died the same way shares those words and nothing else
    text = ("Segmentation fault: 11\n\n"
            "terminate called after throwing an instance of 'dmlc::Error'\n"
            "  what():  driver shutting down\nAborted\n")
    words = set(nearest.words_of(nearest.BOILERPLATE.sub(" ", text)))
    assert not words & {"terminate", "throwing", "instance", "segmentation", "fault", "aborted"}
    assert "dmlc" in words
    # what happened stays a word: only the shell's own "Aborted" line is how it died
    assert "aborted" in nearest.words_of(nearest.BOILERPLATE.sub(" ", "NCCL communicator was aborted on rank 3"))
    diagnosis = api.diagnose_texts([("paste", text)], kb=kb)
    assert not any(is_guess(f) for f in diagnosis.findings), [f.rule_id for f in diagnosis.findings]
    assert diagnosis.unmatched_errors  # the lines are still shown as unexplained
