"""A synthetic personal history for `bench backfill`: N events over two years on five platforms.

What a real import looks like, deterministically from a seed:

- one owner (`OWNER`) and a cast of people, each under a handle per platform they use (a phone
  number, an email address, a Slack id, a Discord tag) and a display name per platform; some change
  number or address halfway and say so in a message;
- iMessage (DMs and two family/friends groups), Gmail (threads with subjects, replies), Slack
  (channels and DMs, work days), Discord (a hobby server, evenings and weekends) and agent sessions;
- bursts (a launch, a move, a trip: a few days at several times the usual rate) and quiet weeks
  (holidays away from work platforms, a week offline), and a slow growth over the two years;
- conversations, not lone messages: a few to a dozen messages in a thread within minutes, English
  text that states facts (moves, jobs, plans with dates, decisions with reasons, preferences, contact
  details, introductions, corrections) between small talk.

Every text is assembled from templates and word lists in this module, so the same seed always gives
the same history, and no two conversations are copies of each other.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

PLATFORMS = ("imessage", "gmail", "slack", "discord", "agent")
FIRST_DAY = date(2023, 1, 2)
DAYS = 730
OWNER = "Alex Moreno"

FIRST_NAMES = (
    *("Priya", "Marcus", "Dana", "Raj", "Elena", "Tom", "Jess", "Leo", "Ana", "Gloria", "Ravi", "Nina"),
    *("Omar", "Hannah", "Diego", "Mei", "Samir", "Clara", "Jonas", "Aisha", "Felix", "Rosa", "Victor", "Yuki"),
    *("Ben", "Lucia", "Kwame", "Ingrid", "Mateo", "Zoe", "Arjun", "Freya", "Noah", "Leila", "Ethan", "Sofia"),
)
LAST_NAMES = (
    *("Kapoor", "Bell", "Whitfield", "Patel", "Rivera", "Chen", "Park", "Souza", "Menon", "Okafor"),
    *("Lindqvist", "Haddad", "Novak", "Tanaka", "Brennan", "Duarte", "Fischer", "Mensah", "Larsen", "Costa"),
)
CITIES = (
    *("Lisbon", "Denver", "Berlin", "Austin", "Toronto", "Seattle", "Porto", "Chicago", "Madrid", "Boston"),
    *("Portland", "Montreal", "Dublin", "Kyoto", "Vancouver", "Oslo", "Sacramento", "Barcelona", "Melbourne"),
)
COMPANIES = (
    *("Northwind", "Kestrel Labs", "Brightline", "Oakridge Health", "Bluefin Analytics", "Harbor Freight Co"),
    *("Lumen Robotics", "Cedar & Pine", "Atlas Mobility", "Quarry Games", "Riverstone Bank", "Juniper Foods"),
)
ROLES = ("product manager", "data engineer", "designer", "nurse", "teacher", "backend engineer", "architect")
PROJECTS = ("Atlas", "Beacon", "Cobalt", "Delta", "Ember", "Falcon", "Granite", "Helix", "Iris", "Juno")
TECH = ("Postgres", "SQLite", "Kafka", "Redis", "React", "Rust", "Terraform", "Snowflake", "DuckDB", "Go")
COMPONENTS = ("billing service", "search index", "mobile app", "data pipeline", "auth flow", "admin dashboard")
CAUSES = (
    "the vendor slipped their delivery",
    "QA found a data loss bug",
    "legal has not signed off on the contract",
    "half the team is out with the flu",
    "the payments SDK is not ready",
    "the client asked for two more weeks",
    "the load tests failed at peak traffic",
)
DOCS = ("budget spreadsheet", "design doc", "quarterly report", "invoice", "slide deck", "lease renewal", "contract")
MEALS = ("lunch", "dinner", "coffee", "brunch", "drinks")
PLACES = (
    *("the Thai place on 5th", "Blue Bottle", "Luigi's", "the farmers market", "Rosie's Diner", "the taco truck"),
    *("the brewery by the park", "Sushi Zen", "the new ramen bar", "Cafe Lumiere"),
)
FOODS = ("sushi", "tacos", "pho", "pizza", "dumplings", "falafel", "curry", "ramen", "paella")
ALLERGENS = ("peanuts", "shellfish", "gluten", "cats", "penicillin", "pollen")
HOBBIES = ("bouldering", "pottery", "running", "chess", "sourdough baking", "birdwatching", "salsa dancing")
PETS = (("dog", "Biscuit"), ("cat", "Miso"), ("dog", "Pepper"), ("cat", "Olive"), ("rabbit", "Clover"))
TRAILS = ("Mount Tam", "Mission Peak", "the Dipsea trail", "Point Reyes", "Muir Woods", "Half Dome")
GAMES = ("Wingspan", "Catan", "Terraforming Mars", "Azul", "Gloomhaven", "Ticket to Ride")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
MONTHS = (
    *("January", "February", "March", "April", "May", "June"),
    *("July", "August", "September", "October", "November", "December"),
)
SMALL_TALK = (
    *("haha", "ok", "sounds good", "thanks!", "lol yes", "on my way", "running 10 min late", "nice!!"),
    *("no worries", "👍", "perfect", "ugh, mondays", "good morning!", "same here", "talk soon", "sure thing"),
    *("That's great news", "Let me check and get back to you", "Got it, thanks", "Love that", "oh no"),
)
MOVE_REASONS = ("of the new job", "my partner got into grad school there", "rent here is insane")
TECH_REASONS = ("the team knows it", "it is cheaper to run", "it handles our load")
INTRO_HOOKS = ("We met at the conference in", "Dana suggested I reach out about the office in")
REPLIES = ("Congrats!", "Oh wow, that's big news.", "Good to know.", "Makes sense.", "Noted, thanks.", "Ha, classic.")

# Relative activity of each platform on a weekday and on a weekend day.
WEEKDAY_WEIGHT = {"imessage": 1.0, "gmail": 0.8, "slack": 1.4, "discord": 0.35, "agent": 0.6}
WEEKEND_WEIGHT = {"imessage": 1.3, "gmail": 0.15, "slack": 0.05, "discord": 1.0, "agent": 0.3}
WORK_PLATFORMS = ("gmail", "slack")


@dataclass
class Person:
    """Someone in the history: a handle and a display name per platform, possibly a new handle from a day on."""

    name: str
    handles: dict[str, str]
    shown: dict[str, str]
    changes: dict[str, tuple[int, str]] = field(default_factory=dict)  # platform -> (from day, new handle)

    @property
    def first(self) -> str:
        return self.name.split()[0]

    def handle(self, platform: str, day: int) -> str:
        change = self.changes.get(platform)
        return change[1] if change and day >= change[0] else self.handles[platform]


@dataclass
class Conversation:
    """Where a burst of messages goes: platform, thread, who may speak, and how it is addressed."""

    platform: str
    thread_id: str
    people: list[Person]
    peer_kind: str
    subject: str | None = None
    replies: int = 0


class HistoryGenerator:
    """Generates the events of one history; `events()` yields them in time order as JSON-ready records."""

    def __init__(self, events: int, seed: int = 7, days: int = DAYS) -> None:
        if events < 1 or days < 1:
            raise ValueError("a history needs at least one event and one day")
        self.total = events
        self.days = days
        self.rng = random.Random(seed)
        self.owner = Person(
            OWNER,
            {
                "imessage": "+15550100",
                "gmail": "alex.moreno@example.com",
                "slack": "U000ALEX",
                "discord": "amoreno#0001",
            },
            {"imessage": OWNER, "gmail": OWNER, "slack": "Alex M", "discord": "Alex"},
        )
        self.owner.handles["agent"], self.owner.shown["agent"] = "me", OWNER
        self.assistant = Person("Assistant", {"agent": "assistant"}, {"agent": "Assistant"})
        self.cast = self._cast()
        self.conversations = self._conversations()
        self.sequence = 0

    # -- who and where ---------------------------------------------------------------------------
    def _cast(self) -> list[Person]:
        rng, people = self.rng, []
        names = [f"{first} {rng.choice(LAST_NAMES)}" for first in FIRST_NAMES]
        for i, name in enumerate(names):
            first, last = name.split()
            handles = {"imessage": f"+1555{200 + i:03d}{rng.randint(1000, 9999)}"}
            shown = {"imessage": rng.choice([name, first, f"{first} {last[0]}."])}
            if i % 3 != 2:
                domain = rng.choice(
                    ["example.com", "mail.example.org", f"{rng.choice(COMPANIES).split()[0].lower()}.example"]
                )
                handles["gmail"], shown["gmail"] = f"{first.lower()}.{last.lower()}@{domain}", name
            if i % 2 == 0:
                handles["slack"], shown["slack"] = f"U{rng.randint(10**6, 10**7 - 1)}", f"{first} {last[0]}"
            if i % 3 == 0:
                handles["discord"] = f"{first.lower()}{rng.randint(1, 99)}#{rng.randint(1000, 9999)}"
                shown["discord"] = rng.choice([first, f"{first.lower()}_{last.lower()}", f"{first[:3]}{last[:3]}"])
            person = Person(name, handles, shown)
            if i % 7 == 3:  # a new number halfway through, announced in a message that day
                person.changes["imessage"] = (rng.randint(200, 600), f"+1555{900 + i:03d}{rng.randint(1000, 9999)}")
            if i % 11 == 5 and "gmail" in handles:
                person.changes["gmail"] = (rng.randint(150, 650), f"{first.lower()}{last[0].lower()}@newmail.example")
            people.append(person)
        return people

    def _on(self, platform: str) -> list[Person]:
        return [p for p in self.cast if platform in p.handles]

    def _conversations(self) -> dict[str, list[Conversation]]:
        rng = self.rng
        talks: dict[str, list[Conversation]] = {p: [] for p in PLATFORMS}
        for person in self._on("imessage"):
            talks["imessage"].append(
                Conversation("imessage", f"iMessage;-;{person.handles['imessage']}", [person], "dm")
            )
        for _group in ("family", "friends"):
            members = rng.sample(self._on("imessage"), 5)
            talks["imessage"].append(
                Conversation("imessage", f"iMessage;+;chat{rng.randint(10**5, 10**6)}", members, "group")
            )
        for channel in ("eng", "launch", "design", "random", "oncall"):
            members = rng.sample(self._on("slack"), 6)
            talks["slack"].append(Conversation("slack", f"C{channel.upper()}01", members, "channel", subject=channel))
        for person in self._on("slack"):
            talks["slack"].append(Conversation("slack", f"D{person.handles['slack']}", [person], "dm"))
        for channel in ("hiking", "board-games", "general"):
            members = self._on("discord")
            talks["discord"].append(
                Conversation("discord", f"trailheads/{channel}", members, "channel", subject=channel)
            )
        return talks

    # -- when --------------------------------------------------------------------------------------
    def day_weights(self) -> list[dict[str, float]]:
        """Relative activity per day and platform: weekday shape, growth, quiet weeks and bursts."""
        rng = self.rng
        weeks = range(4, max(5, self.days // 7 - 4))  # not the first and last month
        holidays = {w * 7 + d for w in rng.sample(weeks, min(6, len(weeks) // 16)) for d in range(7)}
        offline = {w * 7 + d for w in rng.sample(weeks, min(2, len(weeks) // 48)) for d in range(7)}
        bursts = {rng.randrange(self.days): rng.choice(PLATFORMS) for _ in range(max(1, 24 * self.days // DAYS))}
        weights = []
        for day in range(self.days):
            weekday = (FIRST_DAY + timedelta(days=day)).weekday()
            base = WEEKEND_WEIGHT if weekday >= 5 else WEEKDAY_WEIGHT
            growth = 0.7 + 0.6 * day / self.days
            row = {}
            for platform in PLATFORMS:
                w = base[platform] * growth * rng.uniform(0.5, 1.5)
                if day in holidays and platform in WORK_PLATFORMS:
                    w *= 0.05
                if day in offline:
                    w *= 0.1
                for start, hot in bursts.items():
                    if hot == platform and start <= day < start + 3:
                        w *= 5
                row[platform] = w
            weights.append(row)
        return weights

    def quotas(self) -> list[dict[str, int]]:
        """Events per day and platform, summing to exactly the asked-for total (largest remainders)."""
        weights = self.day_weights()
        scale = self.total / sum(sum(row.values()) for row in weights)
        cells = [(day, p, w * scale) for day, row in enumerate(weights) for p, w in row.items()]
        counts = {(day, p): int(x) for day, p, x in cells}
        short = self.total - sum(counts.values())
        for day, p, _ in sorted(cells, key=lambda c: c[2] - int(c[2]), reverse=True)[:short]:
            counts[(day, p)] += 1
        return [{p: counts[(day, p)] for p in PLATFORMS} for day in range(self.days)]

    # -- what --------------------------------------------------------------------------------------
    def events(self) -> Iterator[dict[str, Any]]:
        """Every event, oldest first."""
        for day, quota in enumerate(self.quotas()):
            todays: list[tuple[datetime, int, dict[str, Any]]] = []
            for platform, count in quota.items():
                while count > 0:
                    burst = self._burst(platform, day, count)
                    count -= len(burst)
                    todays += burst
            for _, _, record in sorted(todays, key=lambda t: (t[0], t[1])):
                yield record

    def _burst(self, platform: str, day: int, budget: int) -> list[tuple[datetime, int, dict[str, Any]]]:
        """One conversation of at most `budget` messages on a day: (time, sequence, record) each."""
        rng = self.rng
        hour = rng.choice([8, 9, 10, 11, 13, 14, 15, 16]) if platform in WORK_PLATFORMS else rng.randint(7, 22)
        when = datetime.combine(FIRST_DAY + timedelta(days=day), datetime.min.time(), UTC)
        when += timedelta(hours=hour + 7, minutes=rng.randint(0, 59))  # Pacific working hours, in UTC
        if platform == "agent":
            session = f"agent-{day:03d}-{rng.randint(0, 9999):04d}"
            talk = Conversation("agent", session, [self.assistant], "dm")
        elif platform == "gmail":
            talk = self._email_thread(day)
        else:
            talk = rng.choice(self.conversations[platform])
        lines = self._script(talk, day)[:budget]
        out = []
        for speaker, text in lines:
            out.append((when, self.sequence, self._record(talk, speaker, text, when, day)))
            self.sequence += 1
            when += timedelta(seconds=rng.randint(5, 20) if platform == "agent" else rng.randint(20, 400))
        return out

    def _email_thread(self, day: int) -> Conversation:
        rng = self.rng
        person = rng.choice(self._on("gmail"))
        subject = rng.choice(
            [
                f"{rng.choice(PROJECTS)} launch plan",
                f"{rng.choice(DOCS).capitalize()} for {rng.choice(MONTHS)}",
                f"Catching up, {person.first}",
                f"Trip to {rng.choice(CITIES)}",
                f"Re: {rng.choice(COMPONENTS)} review",
            ]
        )
        return Conversation("gmail", f"gm-{day:03d}-{rng.randint(0, 10**6):06d}", [person], "dm", subject=subject)

    def _script(self, talk: Conversation, day: int) -> list[tuple[Person, str]]:
        """Messages of one conversation: a topic that states facts, answers, small talk."""
        rng = self.rng
        other = rng.choice(talk.people)
        if talk.platform == "agent":
            return self._agent_script(day)
        topic = rng.choice(self._topics(talk.platform))
        lines = topic(other, day)
        while rng.random() < 0.45:
            lines.append((rng.choice([self.owner, other]), rng.choice(SMALL_TALK)))
        if talk.platform == "gmail":
            lines = self._as_emails(talk, lines)
        return lines

    def _topics(self, platform: str) -> list[Any]:
        personal = [self._life_update, self._plans, self._preference, self._pet_or_hobby, self._contact_change]
        work = [self._work_update, self._decision, self._request, self._introduction]
        if platform in WORK_PLATFORMS:
            return work * 2 + personal[:2]
        if platform == "discord":
            return [self._hike, self._game_night, self._pet_or_hobby, self._plans]
        return personal * 2 + [self._correction, self._small_talk]

    # Each topic returns (speaker, text) lines; `o` is the other person, `a` the owner.
    def _life_update(self, o: Person, day: int) -> list[tuple[Person, str]]:
        r = self.rng
        city, month, company = r.choice(CITIES), r.choice(MONTHS), r.choice(COMPANIES)
        news = r.choice(
            [
                f"I'm moving to {city} in {month} because {r.choice(MOVE_REASONS)}.",
                f"I started a new job at {company} as a {r.choice(ROLES)}!",
                f"My sister {r.choice(FIRST_NAMES)} is getting married in {city} in {month}.",
                f"We finally bought a house in {city}, closing is on {month} {r.randint(1, 28)}.",
                f"I'm training for the {city} half marathon in {month}.",
            ]
        )
        return [
            (o, news),
            (self.owner, r.choice(REPLIES)),
            (o, r.choice(["Thanks!!", "Yeah it's a lot", "Can't wait"])),
        ]

    def _plans(self, o: Person, day: int) -> list[tuple[Person, str]]:
        r = self.rng
        meal, weekday, place = r.choice(MEALS), r.choice(WEEKDAYS), r.choice(PLACES)
        hour = r.randint(11, 20)
        return [
            (self.owner, f"Are you free for {meal} on {weekday}?"),
            (o, f"Yes! How about {place} at {hour % 12 or 12}{'pm' if hour >= 12 else 'am'}?"),
            (self.owner, "Perfect, see you there"),
        ]

    def _preference(self, o: Person, day: int) -> list[tuple[Person, str]]:
        r = self.rng
        line = r.choice(
            [
                f"I'm allergic to {r.choice(ALLERGENS)}, so please no {r.choice(FOODS)} for me.",
                f"My favorite food is {r.choice(FOODS)}, always has been.",
                "I prefer window seats on long flights, aisle on short ones.",
                f"Honestly I'd rather do {r.choice(FOODS)} than {r.choice(FOODS)} tonight.",
            ]
        )
        return [(r.choice([o, self.owner]), line), (r.choice([o, self.owner]), r.choice(REPLIES))]

    def _pet_or_hobby(self, o: Person, day: int) -> list[tuple[Person, str]]:
        r = self.rng
        kind, name = r.choice(PETS)
        line = r.choice(
            [
                f"We just adopted a {kind} named {name}!",
                f"I've been getting into {r.choice(HOBBIES)} lately, three times a week.",
                f"I ran {r.randint(3, 15)} miles this morning before work.",
            ]
        )
        return [(o, line), (self.owner, r.choice(REPLIES))]

    def _contact_change(self, o: Person, day: int) -> list[tuple[Person, str]]:
        r = self.rng
        if "imessage" in o.changes and o.changes["imessage"][0] <= day:
            return [(o, f"New number, save this one: {o.changes['imessage'][1]}"), (self.owner, "Saved!")]
        if "gmail" in o.changes and o.changes["gmail"][0] <= day:
            return [(o, f"You can reach me at {o.changes['gmail'][1]} from now on."), (self.owner, "Got it")]
        return [
            (o, f"My work email is {o.first.lower()}@{r.choice(COMPANIES).split()[0].lower()}.example"),
            (self.owner, "thx"),
        ]

    def _correction(self, o: Person, day: int) -> list[tuple[Person, str]]:
        r = self.rng
        a, b = r.sample(WEEKDAYS, 2)
        return [
            (o, f"The dentist appointment is on {a} at {r.randint(8, 11)}am."),
            (o, f"Actually, it's on {b}, not {a}. Sorry!"),
            (self.owner, "No problem, updated my calendar"),
        ]

    def _small_talk(self, o: Person, day: int) -> list[tuple[Person, str]]:
        r = self.rng
        return [(r.choice([o, self.owner]), r.choice(SMALL_TALK)) for _ in range(r.randint(2, 5))]

    def _work_update(self, o: Person, day: int) -> list[tuple[Person, str]]:
        r = self.rng
        project, month = r.choice(PROJECTS), r.choice(MONTHS)
        return [
            (o, f"Heads up: we moved the {project} launch to {month} {r.randint(1, 28)} because {r.choice(CAUSES)}."),
            (self.owner, f"Thanks for the heads up. Does that affect the {r.choice(COMPONENTS)}?"),
            (o, r.choice(["Not really, it was already done.", "Yes, it slips by a week too.", "Only the QA part."])),
        ]

    def _decision(self, o: Person, day: int) -> list[tuple[Person, str]]:
        r = self.rng
        tech, other, component = *r.sample(TECH, 2), r.choice(COMPONENTS)
        return [
            (self.owner, f"Should we use {tech} or {other} for the {component}?"),
            (
                o,
                f"Let's go with {tech}, since {r.choice(TECH_REASONS)}.",
            ),
            (self.owner, f"Decision made: {tech} for the {component}."),
        ]

    def _request(self, o: Person, day: int) -> list[tuple[Person, str]]:
        r = self.rng
        doc, weekday = r.choice(DOCS), r.choice(WEEKDAYS[:5])
        return [
            (o, f"Can you send me the {doc} by {weekday}?"),
            (self.owner, f"Sure, I'll send the {doc} by {weekday} morning."),
        ]

    def _introduction(self, o: Person, day: int) -> list[tuple[Person, str]]:
        r = self.rng
        company = r.choice(COMPANIES)
        return [
            (
                o,
                f"Hi, this is {o.name} from {company}. {r.choice(INTRO_HOOKS)} {r.choice(CITIES)}.",
            ),
            (self.owner, f"Hi {o.first}, great to hear from you!"),
        ]

    def _hike(self, o: Person, day: int) -> list[tuple[Person, str]]:
        r = self.rng
        trail, weekday = r.choice(TRAILS), r.choice(WEEKDAYS[4:])
        return [
            (o, f"Who's up for {trail} on {weekday}? Meeting at the trailhead at {r.randint(6, 9)}am."),
            (self.owner, "I'm in! I'll bring snacks"),
            (o, f"Moving it to {r.choice(WEEKDAYS[5:])} because rain is forecast."),
        ]

    def _game_night(self, o: Person, day: int) -> list[tuple[Person, str]]:
        r = self.rng
        game = r.choice(GAMES)
        return [
            (o, f"Game night at my place on {r.choice(WEEKDAYS)}, we're playing {game}."),
            (self.owner, f"Yes! I haven't played {game} in ages"),
        ]

    def _agent_script(self, day: int) -> list[tuple[Person, str]]:
        r = self.rng
        person, city = r.choice(self.cast), r.choice(CITIES)
        ask = r.choice(
            [
                f"Can you help me draft an email to {person.name} about the {r.choice(DOCS)}?",
                f"Remind me that my passport expires in {r.choice(MONTHS)}; I must renew it before the {city} trip.",
                f"What should I pack for a week in {city} in {r.choice(MONTHS)}?",
                f"I need a plan to migrate the {r.choice(COMPONENTS)} to {r.choice(TECH)} by {r.choice(MONTHS)}.",
            ]
        )
        answer = r.choice(
            [
                f"Sure. Here's a short draft for {person.first}: a thank-you, the open questions, and a date.",
                "Noted. I'll keep that in mind and bring it up when you plan the trip.",
                "Start with an inventory of what depends on it, then move one service at a time behind a flag.",
                f"Layers, a rain jacket and comfortable shoes; {city} can be cool in the evenings.",
            ]
        )
        return [
            (self.owner, ask),
            (self.assistant, answer),
            (self.owner, r.choice(["Thanks!", "Perfect", "Great, do it"])),
        ]

    def _as_emails(self, talk: Conversation, lines: list[tuple[Person, str]]) -> list[tuple[Person, str]]:
        """Emails carry a subject line and a greeting and sign-off around the message."""
        out = []
        for speaker, text in lines:
            to = self.owner if speaker is not self.owner else talk.people[0]
            subject = ("Re: " if talk.replies else "") + (talk.subject or "Hello")
            talk.replies += 1
            out.append((speaker, f"Subject: {subject}\n\nHi {to.first},\n\n{text}\n\nBest,\n{speaker.first}"))
        return out

    def _record(self, talk: Conversation, speaker: Person, text: str, when: datetime, day: int) -> dict[str, Any]:
        platform = talk.platform
        outbound = speaker is self.owner
        record: dict[str, Any] = {
            "id": f"{platform}-{self.sequence:07d}",
            "platform": platform,
            "sender_id": speaker.handle(platform, day),
            "sender_name": speaker.shown[platform],
            "peer_kind": talk.peer_kind,
            "thread_id": talk.thread_id,
            "direction": "outbound" if outbound else "inbound",
            "content": text,
            # Each platform's exporter writes time its own way: unix seconds, milliseconds or ISO 8601.
            "as_of": int(when.timestamp())
            if platform == "imessage"
            else int(when.timestamp() * 1000)
            if platform in ("discord", "slack")
            else when.isoformat().replace("+00:00", "Z"),
        }
        if talk.peer_kind == "dm":
            record["peer_id"] = talk.people[0].handle(platform, day) if outbound else self.owner.handle(platform, day)
        else:
            record["peer_id"] = talk.thread_id
        if platform == "agent":
            record["session_id"] = talk.thread_id
        if talk.subject and platform != "gmail":
            record["metadata"] = {"channel": talk.subject}
        return record


def write_history(path: Path, events: int, seed: int = 7, days: int = DAYS) -> dict[str, int]:
    """Write a history of `events` events over `days` days to a JSONL file; returns events per platform."""
    counts: dict[str, int] = {}
    with path.open("w", encoding="utf-8") as out:
        for record in HistoryGenerator(events, seed, days).events():
            counts[record["platform"]] = counts.get(record["platform"], 0) + 1
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    return counts
