"""Build the shipped example suite ``builtin:sst2-phenomena`` from SST-2 training sentences.

A small non-CheckList suite (300 cases) whose levels are ``phenomenon`` (negation, contrast, intensifier,
comparison, plain; the scoring level) and ``length`` (short, medium, long): it shows a suite declares its
own grouping, and the tests run the whole path on it. MFT cases keep the sentence's SST-2 label; INV cases
perturb a sentence with typos and punctuation and expect the prediction not to change.

    python -m tools.data.build_example_suite [OUT]   # default: beluga_core/data/builtin/suites/sst2-phenomena.jsonl.gz
"""

from __future__ import annotations

import argparse
import random
import re
from pathlib import Path

from beluga_core.data.suite.suite_files import write_suite
from beluga_core.data.suite.suite_schema import Case, Expectation, SuiteHeader
from beluga_core.tasks.sentiment import SentimentTask

PHENOMENA = {
    "negation": re.compile(r"\b(not|n't|never|no|nothing|nobody)\b"),
    "contrast": re.compile(r"\b(but|although|though|yet|however)\b"),
    "intensifier": re.compile(r"\b(very|really|extremely|so|too|incredibly|utterly)\b"),
    "comparison": re.compile(r"\b(than|more|less|better|worse|most|least)\b"),
}
MFT_PER_GROUP = 40
INV_PER_GROUP = 20
EQ = Expectation(kind="eq", agg="all", level="single", target="label")
INV = Expectation(kind="inv", agg="all_except_first", level="pairwise", tolerance=0.1)


def phenomenon(sentence: str) -> str:
    hits = [name for name, rx in PHENOMENA.items() if rx.search(sentence)]
    return hits[0] if len(hits) == 1 else ("plain" if not hits else "")


def length_bucket(sentence: str) -> str:
    n = len(sentence.split())
    return "short" if n <= 10 else "medium" if n <= 20 else "long"


def typo(sentence: str, rng: random.Random, times: int = 1) -> str:
    words = sentence.split()
    for _ in range(times):
        candidates = [i for i, w in enumerate(words) if len(w) > 3 and w.isalpha()]
        if not candidates:
            break
        i = rng.choice(candidates)
        j = rng.randrange(len(words[i]) - 1)
        w = words[i]
        words[i] = w[:j] + w[j + 1] + w[j] + w[j + 2:]
    return " ".join(words)


def punctuation(sentence: str) -> str:
    s = sentence.rstrip()
    return s[:-1].rstrip() if s.endswith((".", "!", "?")) else s + " ."


def build(out: Path) -> Path:
    task = SentimentTask()
    data = task.load_iid("builtin:sst2", eval_seed=42)
    rng = random.Random("sst2-phenomena")
    by_group: dict[str, list[tuple[str, int]]] = {}
    for ex in data.train:
        sentence = str(ex.inputs).strip()
        if len(sentence.split()) < 6:
            continue  # SST-2 train is mostly phrases; the suite wants sentences
        group = phenomenon(sentence)
        if group:
            by_group.setdefault(group, []).append((sentence, ex.label))
    cases: list[Case] = []
    for group in ["negation", "contrast", "intensifier", "comparison", "plain"]:
        pool = sorted(set(by_group[group]))
        rng.shuffle(pool)
        for i, (sentence, label) in enumerate(pool[:MFT_PER_GROUP]):
            cases.append(Case(id=f"sst2-phenomena/{group}/mft/{i}",
                              groups={"phenomenon": group, "length": length_bucket(sentence)},
                              test_type="MFT", loss="mft", inputs=[sentence], label=label, expectation=EQ,
                              meta={"source": "SST-2 train"}))
        for i, (sentence, _label) in enumerate(pool[MFT_PER_GROUP:MFT_PER_GROUP + INV_PER_GROUP]):
            perturbed = [typo(sentence, rng), typo(sentence, rng, 2), punctuation(sentence)]
            perturbed = [p for p in dict.fromkeys(perturbed) if p != sentence]
            cases.append(Case(id=f"sst2-phenomena/{group}/inv/{i}",
                              groups={"phenomenon": group, "length": length_bucket(sentence)},
                              test_type="INV", loss="inv", inputs=[sentence, *perturbed], expectation=INV,
                              meta={"source": "SST-2 train", "perturbations": ["typo", "2 typos", "punctuation"]}))
    header = SuiteHeader(
        name="sst2-phenomena", description="Example grouped suite built from SST-2 training sentences: "
        "linguistic phenomenon (scoring level) and sentence length.", levels=["phenomenon", "length"],
        scoring_level="phenomenon", task="sentiment", input_kind="text", label_space=["negative", "positive"],
        test_types=["MFT", "INV"], losses=["mft", "inv"],
        source={"built_by": "tools/data/build_example_suite.py", "from": "builtin:sst2 (train split)"})
    return write_suite(out, header, cases)


if __name__ == "__main__":
    default = (Path(__file__).resolve().parents[2] / "beluga_core" / "data" / "builtin" / "suites"
               / "sst2-phenomena.jsonl.gz")
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("out", nargs="?", type=Path, default=default)
    print(build(parser.parse_args().out))
