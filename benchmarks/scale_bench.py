"""Scale run: a LoCoMo-sized corpus (6,240 turns → ≈ 6,000 entries, 500 queries) imported and swept on
both databases with the ordinary CLI and no special flags.

    .venv/bin/python benchmarks/scale_bench.py [--conversations 10] [--sessions 24] [--turns 26]
                                               [--backends sqlite,oceanbase] [--work DIR] [--keep]

1. Writes a synthetic ``locomo10.json`` in the exact upstream layout (seeded; dialog
   turns from templates over a varied vocabulary, questions whose evidence is one or two
   turns, adversarial questions about the other speaker) — no data is downloaded.
2. Imports it with ``python -m powercontext.eval import locomo`` (each conversation's
   next-conversation questions become cross-conversation negatives).
3. Sweeps it with ``python -m powercontext.eval sweep --dataset … --backends
   sqlite,oceanbase`` in a fresh run folder, with a fresh embedding cache (so embedding
   is part of the figure) and a seekdb of its own, and prints what the CLI prints: the
   summary, wall time, peak RSS, per-stage times and the report path.

Prints figures; asserts nothing. ``make scale`` runs it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

NAMES = ["Ana", "Ben", "Caro", "Dev", "Eli", "Farah", "Gus", "Hana", "Ivo", "Jun", "Kira", "Lars", "Mei", "Nico",
         "Omar", "Pia", "Quinn", "Rosa", "Sven", "Tara"]
FRIENDS = ["Maya", "Leo", "Zoe", "Theo", "Iris", "Felix", "Nora", "Hugo", "Lena", "Ravi", "Sofia", "Tom", "Yuki", "Ada"]
RELATIONS = ["sister", "brother", "cousin", "neighbour", "colleague", "old friend", "roommate", "aunt", "uncle"]
ACTIVITIES = ["hiking", "kayaking", "rock climbing", "birdwatching", "cycling", "sketching", "camping", "swimming",
              "running", "fishing", "skating", "gardening", "baking", "volunteering", "stargazing", "surfing"]
PLACES = ["the lake trail", "Pine Ridge", "the old harbour", "Willow Park", "the river canyon", "Cedar Falls",
          "the botanical garden", "Silver Beach", "the north quarry", "Maple Hill", "the city pool", "Fox Hollow",
          "the community farm", "Granite Peak", "the coastal path", "Elm Street market"]
OBJECTS = ["a blue ceramic mug", "a vintage camera", "a second-hand cello", "a wooden chess set", "a red kayak",
           "a tent for four people", "a sourdough starter", "a telescope", "noise-cancelling headphones",
           "a road bike", "a watercolour set", "hiking boots", "a sewing machine", "a fern and two cacti"]
TOPICS = ["a documentary about octopuses", "a mystery novel set in Lisbon", "a podcast on ancient Rome",
          "a cooking show about street food", "a series about a chess prodigy", "a book on habit building",
          "an album by a Malian guitarist", "a film about climbing El Capitan", "a memoir of a ship's cook"]
JOBS = ["started a new job at a bakery", "got promoted to team lead", "began a night class in accounting",
        "signed up for a pottery course", "joined a choir", "started learning Portuguese",
        "adopted a rescue dog", "moved into a flat near the station", "finished a first half marathon"]
DAYS = ["on Saturday", "last weekend", "on Tuesday evening", "yesterday", "two weeks ago", "on Sunday morning",
        "last Friday", "over the holiday"]
FEELINGS = ["exhausting but worth it", "really peaceful", "a bit scary at first", "so much fun",
            "harder than I expected", "the highlight of my month", "surprisingly relaxing"]
ASIDES = ["{friend} says hi, by the way.", "I ran into {friend} near {place}.", "We should go to {place} together.",
          "{friend} told me the same thing.", "Remember the picnic at {place}?", "I miss our walks around {place}."]
CHAT = ["How have you been lately?", "That sounds lovely, tell me more!", "Haha, I can imagine.",
        "I have been so busy with work this week.", "Wow, good for you!", "Let's catch up again soon.",
        "I hope the weather stays nice for you.", "That reminds me of our trip last year.", "Oh no, that's annoying.",
        "I'm proud of you, honestly.", "Send me pictures next time!", "Same here, it's been a long week."]


def _month(rng: random.Random, session: int) -> str:
    months = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
              "November", "December"]
    return f"{rng.randint(8, 11)}:{rng.choice(['05', '20', '41'])} pm on {rng.randint(1, 28)} {months[session % 12]}, 2023"


def _fact(rng: random.Random, speaker: str, other: str):
    """A fact turn and the questions it answers: (text, [(question, answer, category)], adversarial question)."""
    kind = rng.randrange(4)
    if kind == 0:
        act, place, friend, rel, day = (rng.choice(ACTIVITIES), rng.choice(PLACES), rng.choice(FRIENDS),
                                        rng.choice(RELATIONS), rng.choice(DAYS))
        text = f"I went {act} at {place} with my {rel} {friend} {day}, it was {rng.choice(FEELINGS)}."
        qs = [(f"Where did {speaker} go {act} with {friend}?", place, 4),
              (f"Who went {act} with {speaker} at {place}?", f"{speaker}'s {rel} {friend}", 4)]
        adv = f"Where did {other} go {act} with {friend}?"
    elif kind == 1:
        obj, day = rng.choice(OBJECTS), rng.choice(DAYS)
        text = f"I finally bought {obj} {day}; I had wanted one for ages."
        qs = [(f"What did {speaker} buy {day}?", obj, 4), (f"What item had {speaker} wanted for ages?", obj, 3)]
        adv = f"What did {other} buy {day}?"
    elif kind == 2:
        topic = rng.choice(TOPICS)
        text = f"I just finished {topic} and I keep thinking about it."
        qs = [(f"Which {topic.split()[1]} did {speaker} recently finish?", topic, 4)]
        adv = f"What did {other} think of {topic}?"
    else:
        job, day = rng.choice(JOBS), rng.choice(DAYS)
        text = f"Big news: I {job} {day}!"
        qs = [(f"What big news did {speaker} share?", job, 4), (f"When did {speaker} share that they {job}?", day, 2)]
        adv = f"When did {other} say they {job}?"
    return text, qs, adv


def synthetic_locomo(conversations: int, sessions: int, turns: int, seed: int = 0,
                     questions_per_conversation: int = 40, adversarial: int = 5) -> list[dict]:
    rng = random.Random(seed)
    data = []
    for c in range(conversations):
        a, b = NAMES[(2 * c) % len(NAMES)], NAMES[(2 * c + 1) % len(NAMES)]
        conversation: dict = {"speaker_a": a, "speaker_b": b}
        facts: list[tuple[str, list, str]] = []  # (dia_id, questions, adversarial question)
        for s in range(1, sessions + 1):
            conversation[f"session_{s}_date_time"] = _month(rng, s)
            rows = []
            for t in range(1, turns + 1):
                speaker, other = (a, b) if t % 2 else (b, a)
                dia_id = f"D{s}:{t}"
                if rng.random() < 0.45:
                    text, qs, adv = _fact(rng, speaker, other)
                    facts.append((dia_id, qs, adv))
                else:  # small talk, varied enough that a speaker rarely repeats a whole turn in a session
                    text = rng.choice(CHAT)
                    if rng.random() < 0.6:
                        text = f"{text} {rng.choice(CHAT)}"
                    if rng.random() < 0.5:
                        text = f"{text} {rng.choice(ASIDES).format(friend=rng.choice(FRIENDS), place=rng.choice(PLACES))}"
                turn = {"speaker": speaker, "dia_id": dia_id, "text": text}
                if rng.random() < 0.03:
                    turn.update(img_url=["https://example.org/photo.jpg"], blip_caption=f"a photo of {rng.choice(PLACES)}")
                rows.append(turn)
            conversation[f"session_{s}"] = rows
        qa = []
        for dia_id, qs, _ in rng.sample(facts, min(questions_per_conversation, len(facts))):
            question, answer, category = rng.choice(qs)
            qa.append({"question": question, "answer": answer, "evidence": [dia_id], "category": category})
        for dia_id, _, adv in rng.sample(facts, min(adversarial, len(facts))):
            qa.append({"question": adv, "evidence": [dia_id], "category": 5, "adversarial_answer": "a tempting answer"})
        data.append({"sample_id": f"conv-{c + 1}", "conversation": conversation, "qa": qa,
                     "observation": {}, "session_summary": {}, "event_summary": {}})
    return data


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--conversations", type=int, default=10)
    p.add_argument("--sessions", type=int, default=24)
    p.add_argument("--turns", type=int, default=26)
    p.add_argument("--backends", default="sqlite,oceanbase")
    p.add_argument("--work", default=None, help="working folder (default: a temporary one, removed afterwards)")
    p.add_argument("--keep", action="store_true", help="keep the working folder")
    args = p.parse_args(argv)
    work = Path(args.work or tempfile.mkdtemp(prefix="pc-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    py = [sys.executable, "-m", "powercontext.eval"]
    try:
        source = work / "locomo10.json"
        source.write_text(json.dumps(synthetic_locomo(args.conversations, args.sessions, args.turns)))
        corpus = work / "locomo-synthetic"
        shutil.rmtree(corpus, ignore_errors=True)
        start = time.perf_counter()
        subprocess.run([*py, "import", "locomo", str(source), str(corpus)], check=True, env=env)
        print(f"import: {time.perf_counter() - start:.1f} s")
        run = [*py, "sweep", "--dataset", str(corpus), "--backends", args.backends, "--out", str(work / "run"),
               "--embedding-cache", str(work / "embeddings"), "--seekdb-dir", str(work / "seekdb")]
        print("$", " ".join(run), flush=True)
        start = time.perf_counter()
        done = subprocess.run(run, env=env)
        children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(f"scale run: exit {done.returncode}, wall {time.perf_counter() - start:.1f} s, largest child peak RSS "
              f"{children:.0f} MiB (the sweep process or the seekdb server it started)")
        return done.returncode
    finally:
        if not args.keep and args.work is None:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"kept {work}")


if __name__ == "__main__":
    sys.exit(main())
