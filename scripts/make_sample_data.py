"""Write nexus_memory/sample_data/events.jsonl: three weeks of one person's messages, deterministically.

The owner of the memory is Sam Rivera, a product engineer in Oakland. Between 3 and 23 March 2025 Sam
texts family and friends (iMessage), emails a manager, a vendor and a landlord (Gmail), plans hikes in a
Discord server, and asks an assistant for help (agent sessions). The story is written so the memory has
something to find: people under several handles, contact details stated in conversation, an
introduction, causes, decisions, commitments, preferences, a correction, and plenty of small talk.

Run: python scripts/make_sample_data.py  (the output only changes when this file does)
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import textwrap
import uuid
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent.parent / "nexus_memory" / "sample_data" / "events.jsonl"
SEED = 20250303
FIRST_DAY = date(2025, 3, 3)  # day 1 of the story, a Monday
DST_START = datetime(2025, 3, 9, 10, 0, tzinfo=UTC)  # 2 am Pacific: clocks go from -08:00 to -07:00
DISCORD_EPOCH_MS = 1_420_070_400_000


@dataclass(frozen=True)
class Person:
    """Someone in the story, with a handle per platform and the name that platform shows."""

    name: str
    handles: dict[str, str]
    shown: dict[str, str | None] = field(default_factory=dict)  # display name per platform, if not `name`

    def display(self, platform: str) -> str | None:
        return self.shown.get(platform, self.name)


PEOPLE: dict[str, Person] = {
    "me": Person(
        "Sam Rivera",
        {"imessage": "+15550100", "gmail": "me@example.com", "discord": "samr#0420", "agent": "me"},
        {"discord": "Sam"},
    ),
    "priya": Person(
        "Priya Kapoor",
        {"imessage": "+15550111", "gmail": "priya.k@example.com", "discord": "priyak#2211"},
        {"discord": "Priya K"},
    ),
    # Priya's new personal address, announced on iMessage on day 8 and used from day 13.
    "priya_new": Person("Priya Kapoor", {"gmail": "priya.kapoor@example.org"}),
    "mom": Person("Elena Rivera", {"imessage": "+15550122"}, {"imessage": "Mom"}),
    "dad": Person("Tom Rivera", {"imessage": "+15550123"}, {"imessage": "Dad"}),
    "jess": Person("Jess Rivera", {"imessage": "+15550124"}, {"imessage": "Jess"}),
    # Jess switches carriers on day 9; the family chat sees her new number from day 11.
    "jess_new": Person("Jess Rivera", {"imessage": "+15550177"}, {"imessage": "Jess"}),
    # Marcus texts out of the blue on day 2 (an unknown number), and is a saved contact after that.
    "marcus_unknown": Person("Marcus Bell", {"imessage": "+15550133"}, {"imessage": None}),
    "marcus": Person("Marcus Bell", {"imessage": "+15550133"}),
    "dana": Person("Dana Whitfield", {"gmail": "dana.whitfield@northwind.example"}),
    "raj": Person("Raj Patel", {"gmail": "raj.patel@northwind.example"}),
    "ravi": Person("Ravi Menon", {"gmail": "ravi.menon@kestrel.example"}),
    "gloria": Person("Gloria Chen", {"gmail": "gloria@oakridge-apts.example"}),
    "dentist": Person("BrightSmile Dental", {"gmail": "appointments@brightsmile.example"}),
    "airline": Person("Skyway Air", {"gmail": "bookings@skywayair.example"}),
    "leo": Person("Leo Park", {"discord": "owlish#7781"}, {"discord": "Leo"}),
    "ana": Person("Ana Souza", {"discord": "trailmix_ana#0042"}, {"discord": "Ana"}),
    "assistant": Person("Assistant", {"agent": "assistant"}),
}

GROUPS = {  # group conversations: platform, id, metadata
    "family": ("imessage", "iMessage;+;chat846201", {"chat_name": "Rivera fam"}),
    "#weekend-hikes": (
        "discord",
        "bay-trail-crew/weekend-hikes",
        {"guild": "Bay Trail Crew", "channel": "weekend-hikes"},
    ),
}

LINE_RE = re.compile(r"^(\w+)(?:\s+\+(\d+(?:\.\d+)?)([smh]))?:\s?(.*)$")


@dataclass
class Generator:
    """Collects events in story order and gives each a platform-shaped id and timestamp."""

    rng: random.Random = field(default_factory=lambda: random.Random(SEED))
    events: list[dict[str, Any]] = field(default_factory=list)
    sequence: int = 0
    email_threads: dict[str, tuple[str, str]] = field(default_factory=dict)  # key -> (thread id, subject)

    def chat(self, where: str, day: int, clock: str, script: str, platform: str | None = None) -> None:
        """A burst of messages in one conversation, one per `speaker [+gap]: text` line."""
        when = local_time(day, clock)
        platform, thread, kind, metadata = self._conversation(where, platform)
        for index, line in enumerate(script_lines(script)):
            match = LINE_RE.match(line)
            if not match:
                raise ValueError(f"cannot read script line: {line!r}")
            speaker, amount, unit, text = match.groups()
            if index:
                when += self._gap(platform, speaker, amount, unit)
            self._add_message(platform, thread, kind, metadata, speaker, when, text.strip())

    def email(
        self,
        thread: str,
        day: int,
        clock: str,
        sender: str,
        to: list[str],
        body: str,
        subject: str | None = None,
        cc: tuple[str, ...] = (),
    ) -> None:
        """One email; the first of a thread names the subject, replies get 'Re: '."""
        if thread not in self.email_threads:
            assert subject, f"the first email of thread {thread} needs a subject"
            self.email_threads[thread] = (digest("thread", thread)[:16], subject)
            full_subject = subject
        else:
            full_subject = "Re: " + self.email_threads[thread][1]
        thread_id = self.email_threads[thread][0]
        when = local_time(day, clock)
        body = textwrap.dedent(body).strip()
        recipients = [PEOPLE[p].handles["gmail"] for p in to]
        copied = [PEOPLE[p].handles["gmail"] for p in cc]
        self._append(
            {
                "id": f"<{digest('gmail', thread, self.sequence)[:20]}@mail.example.com>",
                "platform": "gmail",
                "sender_id": PEOPLE[sender].handles["gmail"],
                "sender_name": PEOPLE[sender].name,
                "peer_id": recipients[0],
                "peer_kind": "dm" if len(recipients) + len(copied) == 1 else "group",
                "thread_id": thread_id,
                "direction": "outbound" if sender == "me" else "inbound",
                "content": f"Subject: {full_subject}\n\n{body}",
                "as_of": when.isoformat(),
                "metadata": {"subject": full_subject, "to": recipients, **({"cc": copied} if copied else {})},
            },
            when,
        )

    def _conversation(self, where: str, platform: str | None) -> tuple[str, str, str, dict[str, Any]]:
        """(platform, thread id, peer kind, metadata) of a group, a DM with a person, or an agent session."""
        if where in GROUPS:
            group_platform, group_id, metadata = GROUPS[where]
            return group_platform, group_id, "group" if group_platform == "imessage" else "channel", metadata
        if where.startswith("agent-"):
            return "agent", where, "dm", {}
        assert platform, f"a DM with {where} needs a platform"
        handle = PEOPLE[where].handles[platform]
        thread = f"iMessage;-;{handle}" if platform == "imessage" else f"dm/{handle}"
        return platform, thread, "dm", {}

    def _gap(self, platform: str, speaker: str, amount: str | None, unit: str | None) -> timedelta:
        """Time before the next message: as written, else a short human (or faster agent) pause."""
        if amount:
            return timedelta(seconds=float(amount) * {"s": 1, "m": 60, "h": 3600}[unit or "s"])
        if platform == "agent":
            return timedelta(seconds=self.rng.randint(4, 15) if speaker == "assistant" else self.rng.randint(40, 150))
        return timedelta(seconds=self.rng.randint(15, 140))

    def _add_message(
        self, platform: str, thread: str, kind: str, metadata: dict[str, Any], speaker: str, when: datetime, text: str
    ) -> None:
        person = PEOPLE[speaker]
        sender = person.handles[platform]
        event: dict[str, Any] = {
            "id": self._message_id(platform, thread, when),
            "platform": platform,
            "sender_id": sender,
            "sender_name": person.display(platform),
            "peer_id": self._peer(platform, thread, kind, speaker),
            "peer_kind": kind,
            "thread_id": thread,
            "direction": "outbound" if speaker == "me" else "inbound",
            "content": text,
        }
        if platform == "agent":
            event["session_id"] = thread
        event["as_of"] = timestamp(platform, when)
        if metadata:
            event["metadata"] = metadata
        self._append({k: v for k, v in event.items() if v is not None}, when)

    def _peer(self, platform: str, thread: str, kind: str, speaker: str) -> str:
        """Where a message went: the group or channel, else the other side of the DM."""
        if kind != "dm":
            return thread
        if platform == "agent":
            return "assistant" if speaker == "me" else "me"
        if speaker != "me":
            return PEOPLE["me"].handles[platform]
        return thread.split(";-;", 1)[1] if platform == "imessage" else thread.split("/", 1)[1]

    def _message_id(self, platform: str, thread: str, when: datetime) -> str:
        if platform == "discord":  # a snowflake: milliseconds since the Discord epoch, then a counter
            ms = int(when.timestamp() * 1000)
            return str(((ms - DISCORD_EPOCH_MS) << 22) + self.sequence % 4096)
        if platform == "imessage":
            return str(uuid.UUID(digest("imessage", thread, self.sequence)[:32])).upper()
        return f"turn-{thread.removeprefix('agent-')}-{self.sequence:04d}"

    def _append(self, event: dict[str, Any], when: datetime) -> None:
        self.sequence += 1
        self.events.append({"_sort": (when.astimezone(UTC), self.sequence), **event})

    def lines(self) -> list[str]:
        ordered = sorted(self.events, key=lambda e: e["_sort"])
        return [json.dumps({k: v for k, v in e.items() if k != "_sort"}, ensure_ascii=False) for e in ordered]


def script_lines(script: str) -> list[str]:
    """The messages of a chat script; an indented line continues the message above it."""
    messages: list[str] = []
    for line in textwrap.dedent(script).strip().splitlines():
        if line[:1].isspace() and messages:
            messages[-1] += " " + line.strip()
        elif line.strip():
            messages.append(line.strip())
    return messages


def digest(*parts: object) -> str:
    return hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()


def local_time(day: int, clock: str) -> datetime:
    """Story day (1 = Mon 3 March 2025) and 'HH:MM' Pacific time as an aware datetime."""
    hour, minute = map(int, clock.split(":"))
    naive = datetime.combine(FIRST_DAY + timedelta(days=day - 1), datetime.min.time()).replace(hour=hour, minute=minute)
    standard = naive.replace(tzinfo=timezone(timedelta(hours=-8)))
    offset = -7 if standard >= DST_START else -8
    return naive.replace(tzinfo=timezone(timedelta(hours=offset)))


def timestamp(platform: str, when: datetime) -> int | str:
    """The as_of each platform's exporter would write, so the sample covers all three forms."""
    if platform == "imessage":
        return int(when.timestamp())  # unix seconds
    if platform == "discord":
        return int(when.timestamp() * 1000)  # unix milliseconds
    return when.astimezone(UTC).isoformat().replace("+00:00", "Z")  # ISO 8601


def week_one(g: Generator) -> None:
    """3-9 March: the launch slips, Postgres is chosen, Marcus appears, the hike moves to Sunday."""
    g.email(
        "launch",
        1,
        "07:52",
        "dana",
        ["me", "priya", "raj"],
        subject="Atlas launch moving to March 25",
        body="""
        Hi all,

        Kestrel told us on Friday that their payments SDK 3.2 won't be ready until March 14. We moved the
        Atlas launch from March 18 to March 25 because the vendor slipped: shipping on the old SDK would
        mean a second migration in April.

        New dates: code freeze March 19, go/no-go March 21, launch March 25.

        Thanks,
        Dana""",
    )
    g.email(
        "launch",
        1,
        "08:31",
        "me",
        ["dana"],
        body="""
        Thanks Dana. The extra week helps QA a lot. I'll update the test plan today.

        Sam""",
    )
    g.chat(
        "priya",
        1,
        "08:40",
        platform="imessage",
        script="""
        priya: did you see Dana's email?? launch slipped a week
        me: yep. Kestrel again
        priya: honestly kind of a relief, QA was never going to finish by the 18th
        me: lol true
        me: coffee at 10? I want to talk through the ledger storage question before tomorrow's review
        priya: yes. Blue Bottle on Broadway?
        me: 👍
        priya +72m: here, grabbed the corner table
        me: 2 min
        """,
    )
    g.chat(
        "agent-s01",
        1,
        "12:20",
        """
        me: I'm choosing storage for an event ledger at work: about 50M rows a year, append-only, and product wants
            ad hoc reporting. Postgres or DynamoDB?
        assistant: For append-only data with ad hoc reporting, Postgres is usually the better fit. DynamoDB shines
            for known access patterns at very high scale, but every new report becomes a new index or an export job. At
            50M rows a year, Postgres with time-based partitioning handles both the writes and SQL reporting
            comfortably.
        me: What would you partition on?
        assistant: Partition by month on the event timestamp, with a composite index on (account_id, created_at).
            Old partitions can be detached and archived cheaply. Keep the ledger insert-only and record corrections as
            new reversing rows rather than updates.
        me: ok that matches what I was going to propose. can you draft a short comparison for the review?
        assistant: Postgres vs DynamoDB for the Atlas ledger. Postgres: SQL reporting out of the box, transactions
            across tables, monthly partitions, and the team already runs it. DynamoDB: predictable latency at any scale,
            but each new report needs a secondary index or an export, and reporting reads drive the cost.
            Recommendation: Postgres; revisit if sustained writes pass about 5,000 per second.
        me: perfect, thanks
        """,
    )
    g.chat(
        "family",
        1,
        "19:05",
        """
        mom: Reminder everyone: my birthday dinner is Wednesday the 12th! 🎂
        jess: I'll book Lucia's in Berkeley, Mom loves their gnocchi
        dad: Sounds good. What time?
        jess: aiming for 7
        dad: I prefer the early seating if they have one, 6pm is better for me
        mom: Your father wants to be in bed by 9 😂
        jess: lol
        me: I'm in. I'll bring the cake from Fournée
        mom: ❤️
        """,
    )
    g.chat(
        "#weekend-hikes",
        1,
        "20:40",
        """
        leo: who's in for Mt Tam on Saturday? thinking Dipsea to Steep Ravine loop
        priya: me!
        me: in
        leo: meet at the Pantoll lot at 8?
        priya: 8 is brutal but ok
        ana +9m: hi all, I'm Ana, I work with Leo at Redwood Health. He said you hike most weekends, mind if I join?
        leo: welcome Ana!! the more the merrier
        me: welcome! bring layers, it's windy up top
        ana: thanks 🙏
        """,
    )

    g.email(
        "postgres",
        2,
        "09:40",
        "dana",
        ["me", "priya", "raj"],
        subject="Atlas ledger: Postgres it is",
        body="""
        Hi team,

        After this morning's architecture review we decided to use Postgres for the Atlas ledger instead of
        DynamoDB. Ad hoc reporting was the deciding factor, and the on-call team already runs Postgres.

        Sam, can you own the migration plan? Priya will pair on the schema.

        Dana""",
    )
    g.email(
        "postgres",
        2,
        "10:12",
        "me",
        ["dana"],
        cc=("priya",),
        body="""
        Happy to own it. I'll have a migration plan draft by Thursday.

        Sam""",
    )
    g.email(
        "postgres",
        2,
        "10:20",
        "priya",
        ["dana", "me"],
        body="""
        Count me in for the schema. I blocked Wednesday afternoon for it.

        Priya""",
    )
    g.chat(
        "marcus_unknown",
        2,
        "12:15",
        platform="imessage",
        script="""
        marcus_unknown: Hey, I'm Marcus from the climbing gym. Jess gave me your number, she said you're looking for
            a belay partner on Thursdays?
        me +4m: Hey Marcus! Yes, definitely. Which gym, Granite Works?
        marcus_unknown: yep, Granite Works on Telegraph. I'm usually there Tues/Thurs after 6:30
        me: perfect. this Thursday at 7?
        marcus_unknown: deal. I'll bring my rope, you bring the chalk 😄
        me +3m: ha ok. see you Thursday
        """,
    )
    g.chat(
        "#weekend-hikes",
        2,
        "13:10",
        """
        leo: weather check: Saturday looks iffy
        priya: ugh
        ana +20m: forecast says 70% rain Saturday, Sunday clear
        leo: let's decide Friday
        """,
    )
    g.chat(
        "mom",
        2,
        "20:15",
        platform="imessage",
        script="""
        mom: Sam, did Jess book Lucia's yet?
        me: I think she's calling tomorrow
        mom: ok. Also your dad wants to know if you can help set up the new printer this weekend
        me: sure, Sunday afternoon?
        mom: Sunday works. Love you
        me: love you too
        """,
    )

    g.chat(
        "agent-s02",
        3,
        "07:30",
        """
        me: I need flights from SFO to Lisbon, April 10, back April 17. My friend Tiago's wedding is April 12 in Sintra.
        assistant: There's no nonstop from SFO to Lisbon; the usual options connect in Newark, Toronto or a European
            hub. An evening departure to Newark connecting to Lisbon lands around noon on April 11, which leaves a day
            before the wedding. Any preferences for airline, seats or layovers?
        me: I prefer window seats, and I'd rather have one long layover than two short ones. No red-eye on the way
            back if possible.
        assistant: Noted: window seats, a single connection each way, and a daytime return. A morning departure from
            Lisbon on April 17 connecting in Newark gets you into SFO the same evening. Should I watch fares and tell
            you when there's a good one?
        me: yes, $1,200 is my cap
        assistant: Got it. I'll look for round trips under $1,200 with window seats, one connection each way, and a
            daytime return on April 17.
        """,
    )
    g.chat(
        "priya",
        3,
        "12:05",
        platform="imessage",
        script="""
        priya: schema session moved to 2? Dana grabbed me for a vendor call
        me: 2 is fine
        priya: Kestrel's PM was on the call, sounds like 3.2 might actually land on the 14th this time
        me: we'll see 🙃
        priya +3h: ok done, I pushed the draft schema to the atlas-ledger branch
        me: nice, reviewing tonight
        """,
    )
    g.email(
        "schema",
        3,
        "15:30",
        "priya",
        ["me"],
        subject="Atlas ledger schema draft",
        body="""
        Sam,

        Draft is on the atlas-ledger branch. Main choices: monthly partitions on created_at, ledger_entries
        is insert-only, corrections go in as reversing entries. Open question: do we make the Kestrel
        transaction id a unique key, or just index it?

        P""",
    )
    g.chat(
        "family",
        3,
        "18:30",
        """
        jess: ok bad news, Lucia's has nothing on Wednesday the 12th
        jess: they have Thursday the 13th at 6 or 8:15
        dad: 6!
        mom: Thursday is fine with me
        jess +6m: booked Thursday 6pm, table for 5, Rob's coming too
        """,
    )
    g.email(
        "schema",
        3,
        "21:40",
        "me",
        ["priya"],
        body="""
        Looks good. Unique key: Kestrel guarantees the id is unique per account, and it saves us a dedupe
        job later. I'll fold this into the migration plan.

        Sam""",
    )

    g.email(
        "plan",
        4,
        "11:05",
        "me",
        ["dana"],
        cc=("priya",),
        subject="Atlas ledger migration plan (draft)",
        body="""
        Hi Dana,

        Here's the draft migration plan, as promised. Summary:
        1. Create the Postgres ledger with monthly partitions (Priya's schema).
        2. Dual-write from the payments service starting March 12.
        3. Backfill the 2024 history on the weekend of March 15.
        4. Cut reads over after the go/no-go on March 21.

        Risk: the backfill depends on Kestrel's export API, which changes in SDK 3.2.

        Sam""",
    )
    g.email(
        "plan",
        4,
        "13:48",
        "dana",
        ["me"],
        cc=("priya",),
        body="""
        This is great, thanks. One more thing: can you write up a QA report on the dual-write test before
        the go/no-go?

        Dana""",
    )
    g.email(
        "plan",
        4,
        "14:02",
        "me",
        ["dana"],
        body="""
        Yes. I'll send the QA report by Friday the 14th.

        Sam""",
    )
    g.chat(
        "marcus",
        4,
        "18:50",
        platform="imessage",
        script="""
        marcus: running 10 late, bridge traffic
        me: no worries, I'll warm up
        marcus +22m: here! where are you
        me: by the lead wall
        marcus +3h: good session! you crushed that 10b
        me: lol barely. same time next week?
        marcus: for sure. btw the gym needs your email for the guest pass
        marcus: mine is marcus.bell@example.net if it's easier to send it to me first
        me: I'll just fill it out at the front desk next time, thanks
        """,
    )
    g.chat(
        "agent-s03",
        4,
        "21:10",
        """
        me: Mom's birthday is on the 12th. She's into gardening and just redid her backyard in Walnut Creek. Gift
            ideas under $100?
        assistant: A few ideas under $100: a large glazed ceramic planter for the new patio, Japanese pruning
            shears, a seed club subscription for spring planting, or a personalized garden stake. If she already has
            good tools, the planter or the seed subscription feels most like a present.
        me: She has all the tools. Planter it is. Anything local in Oakland?
        assistant: Dry Garden in Oakland and Flowerland in Albany both carry glazed planters. Call ahead to check
            they have large ones in stock.
        me: Perfect, I'll go Saturday
        """,
    )
    g.chat(
        "#weekend-hikes",
        4,
        "21:15",
        """
        priya: how was climbing Sam
        me: humbling 😅
        priya: lol
        """,
    )

    g.chat(
        "#weekend-hikes",
        5,
        "09:10",
        """
        leo: ok calling it: rain Saturday, so we're moving the hike to Sunday. same trailhead, 8am
        ana: works for me
        priya: Sunday's better anyway, I have a thing Saturday
        me: 👍
        leo: I'll drive, can take 3
        ana: 🙋‍♀️
        me: I'll take the other seat
        leo: done. Ana and Sam with me, Priya meets us there
        """,
    )
    g.chat(
        "priya",
        5,
        "12:40",
        platform="imessage",
        script="""
        priya: lunch?
        me: brb, in a meeting till 1
        priya +24m: ok
        me +4m: back. tacos?
        priya: tacos
        """,
    )
    g.email(
        "lease",
        5,
        "16:05",
        "gloria",
        ["me"],
        subject="Lease renewal: 418 Oakridge Ave, Unit 3",
        body="""
        Hi Sam,

        Your lease ends April 30 and we'd be happy to renew. The rent for a new 12-month term would be
        $2,975 (currently $2,850); month-to-month would be $3,200.

        Please let me know by March 21.

        Best,
        Gloria Chen
        Oakridge Apartments""",
    )
    g.chat(
        "family",
        5,
        "19:45",
        """
        jess: Rob says hi 👋
        mom: Hi Rob!
        dad: Sam, printer Sunday still on?
        me: Yes, I'll come by around 3 after my hike
        dad: Great
        """,
    )

    g.chat(
        "mom",
        6,
        "10:30",
        platform="imessage",
        script="""
        mom: it's pouring here
        me: same, glad we moved the hike
        mom: what hike?
        me: Mt Tam with Priya and some friends, it's tomorrow now
        mom: be careful on the wet trails
        me: ok
        """,
    )
    g.chat(
        "agent-s04",
        6,
        "13:00",
        """
        me: My landlord offered a 12-month renewal at $2,975, up from $2,850. Similar 1-bedrooms in my part of
            Oakland list around $2,900. Is it worth negotiating?
        assistant: Yes. A 4.4% increase is within the local cap, but asking costs nothing. Point to the comparable
            listings, mention that you've paid on time for two years, and offer to sign for 12 months at a slightly
            lower rent. Landlords often prefer a reliable tenant to a vacant month and turnover costs.
        me: I'll counter at $2,925 and see. can you draft it?
        assistant: Hi Gloria, thanks for the renewal offer. I'd like to stay another year. Similar units nearby are
            listed around $2,900 and I've always paid on time, so I'd like to propose $2,925 for a 12-month term. Let me
            know what you think. Best, Sam
        me: great
        """,
    )
    g.email(
        "lease",
        6,
        "13:20",
        "me",
        ["gloria"],
        body="""
        Hi Gloria, thanks for the renewal offer. I'd like to stay another year. Similar units nearby are
        listed around $2,900 and I've always paid on time, so I'd like to propose $2,925 for a 12-month term.
        Let me know what you think.

        Best,
        Sam""",
    )
    g.chat(
        "jess",
        6,
        "16:00",
        platform="imessage",
        script="""
        jess: did you buy mom's gift yet
        me: getting a big ceramic planter from Dry Garden, heading there now
        jess: omg she'll love it. I'm doing the flowers
        me: split the card?
        jess: yes, I'll grab one
        """,
    )

    g.chat(
        "#weekend-hikes",
        7,
        "07:40",
        """
        ana: leaving now
        leo: picked up Sam, 20 min out
        priya +25m: I'm at Pantoll, it's freezing lol
        """,
    )
    g.chat(
        "#weekend-hikes",
        7,
        "12:45",
        """
        leo: what a day. Steep Ravine was gorgeous
        priya: my legs are dead
        ana: thanks for having me! same time next weekend?
        leo: Point Reyes next? Tomales Point is 9.5 miles round trip
        me: I'm in for Point Reyes
        """,
    )
    g.chat(
        "dad",
        7,
        "15:05",
        platform="imessage",
        script="""
        dad: you here?
        me: parking now
        dad +2h: Printer works! Thanks for the help
        me: anytime. it was the wifi password all along lol
        """,
    )


def week_two(g: Generator) -> None:
    """10-16 March: new contact details, the dinner correction, the lease decision, the QA report."""
    g.chat(
        "priya",
        8,
        "09:15",
        platform="imessage",
        script="""
        priya: heads up, my new email is priya.kapoor@example.org. I'm switching providers and the old one stops
            working at the end of March
        me: got it, updating your contact
        priya: ty!
        """,
    )
    g.email(
        "kestrel",
        8,
        "11:30",
        "ravi",
        ["me", "dana"],
        subject="Kestrel SDK 3.2 release candidate",
        body="""
        Hi Sam, hi Dana,

        Quick update: the 3.2 release candidate will be available on March 14 as planned, and the export API
        change ships in the same build. Sorry again for the delay; the slip came from a certification issue
        with our card network partner.

        Ravi Menon
        Partner Engineering, Kestrel Systems""",
    )
    g.email(
        "kestrel",
        8,
        "11:55",
        "me",
        ["ravi"],
        cc=("dana",),
        body="""
        Thanks Ravi. We'll start the backfill test on the RC on Saturday the 15th. Please tell us right away
        if the date moves again.

        Sam""",
    )
    g.chat(
        "#weekend-hikes",
        8,
        "20:20",
        """
        leo: anyone watching the game
        ana: lol no
        priya: brb dinner
        """,
    )
    g.chat(
        "agent-s05",
        8,
        "21:00",
        """
        me: For Lisbon, can you find me a hotel in Alfama or Chiado, April 11 to 17? Budget around $180 a night.
        assistant: In that range, small hotels in Chiado tend to be the best value, and they're walkable to the old
            town and to Rossio station for the train to Sintra. Alfama is charming but hilly, and taxis struggle in its
            narrow streets.
        me: Chiado then. I'm vegetarian, anything good nearby?
        assistant: Chiado and Bairro Alto have plenty: Portuguese petiscos places with vegetable dishes, and several
            fully vegetarian restaurants within a 10-minute walk. I'll keep vegetarian in mind for any restaurant
            suggestions.
        me: thanks!
        """,
    )

    g.chat(
        "family",
        9,
        "08:10",
        """
        dad: See everyone Wednesday at Lucia's!
        mom: Actually, the dinner is on Thursday, not Wednesday. Lucia's had no tables on Wednesday, remember?
        dad: Oh right. Thursday the 13th, 6pm
        jess: lol Dad
        me: Thursday 6 ✅
        mom +5m: Jess got a new number by the way, she switched carriers: +1 555 0177. Update your phones!
        jess: yep, the old one stops working Friday
        """,
    )
    g.email(
        "lease",
        9,
        "10:00",
        "gloria",
        ["me"],
        body="""
        Hi Sam,

        Thanks for the note. We can do $2,950 for a 12-month term. Let me know and I'll send the paperwork.

        Gloria""",
    )
    g.chat(
        "marcus",
        9,
        "17:50",
        platform="imessage",
        script="""
        marcus: thursday still on?
        me: I have a family dinner Thursday, could we do Wednesday instead?
        marcus: Wednesday works. 7?
        me: 7 👍
        """,
    )

    g.chat(
        "agent-s06",
        10,
        "08:15",
        """
        me: Landlord came back at $2,950 for 12 months after I countered $2,925. Take it?
        assistant: The difference is $25 a month, $300 over the year. Moving would cost far more than that, and
            $2,950 is close to market, so taking it is sensible unless you were already thinking about moving.
        me: not moving. ok, decided: renew for 12 months at $2,950
        assistant: Sounds good. Reply today so the paperwork arrives well before the March 21 deadline.
        """,
    )
    g.email(
        "lease",
        10,
        "08:40",
        "me",
        ["gloria"],
        body="""
        Hi Gloria,

        $2,950 for 12 months works for me. Please send the paperwork over.

        Thanks,
        Sam""",
    )
    g.chat(
        "priya",
        10,
        "12:30",
        platform="imessage",
        script="""
        priya: dual write is live in staging 🎉
        me: !!! nice
        priya: first 10k events match between Dynamo and Postgres
        me: I'll start the QA report tonight
        """,
    )
    g.chat(
        "marcus",
        10,
        "18:55",
        platform="imessage",
        script="""
        marcus: here early, taking the auto belay for a bit
        me +12m: walking in
        me +2.5h: thanks for switching days
        marcus: np. my brother Dev might join next week, he's new to climbing
        me: the more the merrier
        """,
    )
    g.chat(
        "#weekend-hikes",
        10,
        "22:00",
        """
        ana: Point Reyes Saturday? forecast is sunny
        leo: yes! Tomales Point, meet at the Pierce Point Ranch lot at 9
        priya: can't this weekend, helping my sister move
        me: I'm in
        ana: I can drive you Sam, you're on my way
        me: that'd be great, thanks Ana
        """,
    )

    g.chat(
        "priya",
        11,
        "10:00",
        platform="imessage",
        script="""
        priya: Kestrel says the RC is out tomorrow morning, fingers crossed
        me: 🤞
        """,
    )
    g.chat(
        "family",
        11,
        "17:40",
        """
        jess_new: running late, parking is a nightmare
        mom: We're at the table
        dad +20m: Sam where are you
        me: 2 min, carrying a cake
        mom +2.5h: Thank you all for a wonderful birthday. The planter is perfect, it's going next to the lemon tree 🍋
        jess_new: love you mom!
        dad: Best birthday dinner in years. That gnocchi!
        """,
    )

    g.email(
        "rc",
        12,
        "09:05",
        "ravi",
        ["me", "dana"],
        subject="Kestrel SDK 3.2 RC is out",
        body="""
        Hi both,

        The RC is published. Main change for you: the export API now paginates by cursor; the old offset
        parameter is deprecated and will be removed in 3.3.

        Ravi""",
    )
    g.chat(
        "priya",
        12,
        "09:30",
        platform="imessage",
        script="""
        priya: RC is out!!
        me: finally
        priya: export API paginates by cursor now, our backfill script uses offsets 😬
        me: I'll fix the script this afternoon
        priya: ty
        """,
    )
    g.email(
        "qa",
        12,
        "15:50",
        "me",
        ["dana"],
        cc=("priya",),
        subject="Atlas dual-write QA report",
        body="""
        Hi Dana,

        As promised, here's the QA report on the dual-write test. Highlights:
        - 1.2M events written to both stores over 48 hours, 0 mismatches after the timezone fix.
        - p95 write latency went from 38 ms to 44 ms with dual-write on.
        - One bug found: refunds were written with the wrong sign in Postgres; Priya fixed it on Wednesday.

        Recommendation: go ahead with the backfill test on Kestrel's RC tomorrow.

        Sam""",
    )
    g.email(
        "qa",
        12,
        "16:30",
        "dana",
        ["me"],
        cc=("priya",),
        body="""
        Thanks Sam, clear and on time. Go for the backfill test.

        Dana""",
    )
    g.chat(
        "#weekend-hikes",
        12,
        "19:00",
        """
        leo: still on for tomorrow?
        ana: yes! picking up Sam at 7:45
        me: ready
        """,
    )

    g.chat(
        "agent-s07",
        13,
        "07:15",
        """
        me: Our backfill script uses offset pagination, and the vendor's export API is now cursor-based. What's the
            cleanest change so it can resume after a crash?
        assistant: Save the last cursor after each page, in the same transaction as the rows you wrote from it. On
            restart, read the saved cursor and continue from there. With a unique key on the vendor transaction id,
            re-processing a page after a crash is harmless: the duplicates are rejected.
        me: good point, the unique key makes it idempotent
        assistant: Exactly. Also log the row count per page, so a short page in the middle of the run stands out.
        """,
    )
    g.chat(
        "#weekend-hikes",
        13,
        "15:30",
        """
        leo: saw 40+ tule elk at Tomales Point 🦌
        ana: best hike yet
        me: sunburned but happy
        ana: Sam, you left your water bottle in my car lol
        me: oh no. grab it Monday? we're both in Oakland
        ana: yep, I'm near Lake Merritt
        """,
    )
    g.email(
        "housewarming",
        13,
        "20:10",
        "priya_new",
        ["me"],
        subject="Housewarming April 5?",
        body="""
        Hi Sam!

        Testing my new address :) My sister Anika finally moved into her place in Alameda, and we're doing a
        housewarming on Saturday, April 5. Come! Bring Marcus if you like, Anika climbs too.

        Priya""",
    )
    g.email(
        "housewarming",
        13,
        "21:00",
        "me",
        ["priya_new"],
        body="""
        Got it on the new address. I'd love to come, and I'll ask Marcus.

        Sam""",
    )

    g.chat(
        "agent-s08",
        14,
        "10:00",
        """
        me: Any fare under $1,200 yet for SFO to Lisbon, April 10 to 17?
        assistant: Yes: $1,084 round trip on Skyway Air, connecting in Newark each way. Outbound April 10 at 6:05
            pm, landing in Lisbon at 12:40 pm on April 11. Return April 17 at 10:15 am, arriving in San Francisco at
            7:50 pm the same day. Window seats 23A and 31A are open on the long legs.
        me: book it, window seats please
        assistant: I can't book it myself, but here's what to pick on the airline's site: the 6:05 pm outbound on
            April 10, the 10:15 am return on April 17, seats 23A and 31A. Book soon; only 3 seats are left at this fare.
        me +20m: booked. confirmation should be in my email
        assistant: Great. Lisbon April 11 to 17, Tiago's wedding in Sintra on April 12.
        """,
    )
    g.email(
        "flight",
        14,
        "10:35",
        "airline",
        ["me"],
        subject="Your trip to Lisbon: confirmation K7QX2P",
        body="""
        Thank you for booking with Skyway Air.

        Confirmation: K7QX2P
        Passenger: Sam Rivera
        Outbound: Thu April 10, SFO 18:05 to Newark, then Newark to Lisbon, arriving Fri April 11 at 12:40.
        Return: Thu April 17, Lisbon 10:15 to Newark, then Newark to SFO, arriving 19:50.
        Seats: 23A and 31A (window).
        Total paid: $1,084.00""",
    )
    g.chat(
        "mom",
        14,
        "18:00",
        platform="imessage",
        script="""
        mom: Your dad put the planter by the lemon tree and now he wants a second one
        me: haha I'll look next time I'm at Dry Garden
        mom: Are you coming for Easter? April 20
        me: yes! I'm back from Lisbon on the 17th
        mom: Lisbon??
        me: Tiago's wedding! I told you at dinner
        mom: Oh right. Send pictures
        """,
    )


def week_three(g: Generator) -> None:
    """17-23 March: backfill done, go/no-go, launch prep, plans for April."""
    g.email(
        "gonogo",
        15,
        "09:10",
        "dana",
        ["me", "priya", "raj"],
        subject="Go/no-go Friday March 21",
        body="""
        Team,

        Go/no-go for Atlas is Friday March 21 at 10am in the Bay room. Owners: Sam (ledger migration and
        backfill), Priya (schema and dual-write), Raj (payments service). Please bring your status on one slide.

        Dana""",
    )
    g.email("gonogo", 15, "09:40", "priya", ["dana"], body="Will do.\n\nPriya")
    g.chat(
        "ana",
        15,
        "12:10",
        platform="discord",
        script="""
        ana: I'm at Lakeshore Coffee till 1 if you want your bottle
        me: omw, 10 min
        ana: see you
        me +40m: thanks Ana! good luck with the Redwood Health audit this week
        """,
    )
    g.chat(
        "marcus",
        15,
        "19:00",
        platform="imessage",
        script="""
        marcus: Dev's coming Wednesday. he bought his own shoes already lol
        me: ha great. Priya invited us to a housewarming April 5 in Alameda, her sister climbs too. want to come?
        marcus: sure, send me details
        me: I'll send the address when she shares it
        """,
    )

    g.chat(
        "priya",
        16,
        "09:00",
        platform="imessage",
        script="""
        priya: fun fact: today was supposed to be launch day
        me: lol imagine
        priya: backfill finished overnight btw. 14.2M rows, 3 pages retried, 0 dupes
        me: the unique key paid off
        priya: 🙌
        """,
    )
    g.email(
        "dentist",
        16,
        "14:00",
        "dentist",
        ["me"],
        subject="Appointment confirmation: March 27",
        body="""
        Hi Sam,

        This confirms your cleaning with Dr. Alvarez on Thursday, March 27 at 3:30 pm at BrightSmile Dental,
        2100 Grand Ave, Oakland.

        Reply C to confirm or call us to reschedule.""",
    )
    g.email("dentist", 16, "14:12", "me", ["dentist"], body="C")
    g.chat(
        "#weekend-hikes",
        16,
        "21:00",
        """
        leo: next weekend I'm out, visiting my parents in Sacramento
        ana: I'm free Sunday
        priya: Sunday yes
        me: Sunday works, something short? I have a thing Saturday
        ana: Redwood Regional, the Stream Trail loop?
        priya: perfect
        """,
    )

    g.chat(
        "agent-s09",
        17,
        "13:00",
        """
        me: Help me write one slide for Friday's go/no-go on the ledger migration. Facts: backfill of 14.2M rows
            done with 0 duplicates; dual-write running 7 days, 0 mismatches since the timezone fix; read cutover planned
            for launch day, March 25; risk: Kestrel SDK 3.2 is still a release candidate.
        assistant: Title: Atlas ledger, ready to go. Status: backfill complete (14.2M rows, 0 duplicates);
            dual-write for 7 days with 0 mismatches since the timezone fix. Plan: cut reads over at launch on March 25.
            Risk: Kestrel SDK 3.2 is still an RC; mitigation: keep reading from DynamoDB for a week after launch if the
            GA build slips. Ask: go.
        me: good. make the risk line shorter
        assistant: Risk: SDK 3.2 still RC. Fallback: keep DynamoDB reads for one week.
        me: perfect, thanks
        """,
    )
    g.chat(
        "marcus",
        17,
        "18:40",
        platform="imessage",
        script="""
        marcus: we're here, Dev is already on the wall
        me +10m: just got in
        me +3h: Dev did great for a first time
        marcus: he's hooked. thanks for being patient with him
        """,
    )

    g.email(
        "ga",
        18,
        "17:00",
        "ravi",
        ["me", "dana"],
        subject="Kestrel SDK 3.2 GA on March 24",
        body="""
        Hi both,

        3.2 goes GA on Monday, March 24. No changes from the RC except two logging fixes.

        Ravi""",
    )
    g.chat(
        "family",
        18,
        "19:00",
        """
        jess_new: Easter at mom and dad's April 20, I'm doing the ham. who's bringing what
        me: I'll bring a big salad and deviled eggs
        dad: I'll do the grill if the weather holds
        mom: Jess, remember Sam is vegetarian, keep a main without meat
        jess_new: obviously mom lol
        """,
    )
    g.chat(
        "priya",
        18,
        "22:30",
        platform="imessage",
        script="""
        priya: slide looks good. nervous about tomorrow?
        me: a bit. Kestrel just said GA is March 24, so the RC risk mostly goes away
        priya: nice
        """,
    )

    g.email(
        "go",
        19,
        "11:20",
        "dana",
        ["me", "priya", "raj"],
        subject="Atlas: GO for March 25",
        body="""
        Team,

        We're go for launch on Tuesday, March 25. Thank you all, especially Sam and Priya for the ledger work.

        Launch night on-call: Sam (primary), Raj (secondary). The runbook is in the Atlas folder.

        Dana""",
    )
    g.chat(
        "priya",
        19,
        "11:25",
        platform="imessage",
        script="""
        priya: WE'RE GO
        me: 🎉🎉
        priya: drinks after work? Snail Bar?
        me: yes! 6?
        priya: 6
        """,
    )
    g.email(
        "go",
        19,
        "11:45",
        "me",
        ["dana"],
        body="""
        Thanks Dana. I'll be on call launch night and will post updates in #atlas-launch every hour.

        Sam""",
    )
    g.chat(
        "priya",
        19,
        "17:58",
        platform="imessage",
        script="""
        priya: here, got us a table outside
        me: 5 min
        """,
    )
    g.chat(
        "#weekend-hikes",
        19,
        "20:00",
        """
        ana: Sunday 9am, Redwood Regional, Skyline Gate
        priya: 👍
        me: ok
        """,
    )

    g.chat(
        "marcus",
        20,
        "10:00",
        platform="imessage",
        script="""
        marcus: climbing this morning? Dev wants a rematch lol
        me: can't today, I have a birthday brunch in SF. next week!
        marcus: ok next week
        """,
    )
    g.chat(
        "agent-s10",
        20,
        "16:00",
        """
        me: What's on my calendar next week?
        assistant: Tuesday, March 25 is the Atlas launch, and you're primary on-call that night. Thursday, March 27
            at 3:30 pm you have a cleaning with Dr. Alvarez at BrightSmile Dental on Grand Ave. Further out: Priya's
            sister's housewarming in Alameda on April 5, and your Lisbon trip April 10 to 17.
        me: also remind me to order a second planter for mom
        assistant: Noted: order a second ceramic planter for your mom. The first one came from Dry Garden in Oakland.
        me: thanks
        """,
    )

    g.chat(
        "#weekend-hikes",
        21,
        "08:50",
        """
        ana: at Skyline Gate
        priya: parking now
        me +5m: here
        """,
    )
    g.chat(
        "#weekend-hikes",
        21,
        "12:30",
        """
        priya: that was a nice short one
        ana: coffee after?
        me: yes, brb getting the car
        priya: Sam, Anika says hi. the housewarming address is 1420 Lincoln Ave, Alameda, from 4pm
        me: thanks, forwarding to Marcus
        """,
    )
    g.chat(
        "marcus",
        21,
        "14:00",
        platform="imessage",
        script="""
        me: housewarming is April 5 at 1420 Lincoln Ave in Alameda, starts at 4
        marcus: 👍 I'll bring Dev if that's ok
        me: totally
        """,
    )
    g.chat(
        "mom",
        21,
        "19:00",
        platform="imessage",
        script="""
        mom: Good luck with the launch this week sweetie
        me: thanks mom! I'll text you when it's live
        mom: ❤️
        """,
    )


def main() -> None:
    generator = Generator()
    week_one(generator)
    week_two(generator)
    week_three(generator)
    lines = generator.lines()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    platforms: dict[str, int] = {}
    for line in lines:
        platform = json.loads(line)["platform"]
        platforms[platform] = platforms.get(platform, 0) + 1
    print(f"wrote {len(lines)} events to {OUT}: {platforms}")


if __name__ == "__main__":
    main()
