"""Display names that imitate someone already known, end to end (ingest -> episodes -> offline writer):
a name that only looks like another sender's, or that carries another sender's address, never names
the one who shows it; their words stay with their own handle. Complements tests/test_identity_attacks.py
(exact names, handle-shaped names, look-alike handles)."""

from __future__ import annotations

import pytest
from test_identity_attacks import DAY_1, DAY_2, facts_of, message, run

from nexus_memory.core.stores import Stores
from nexus_memory.identity import store as identity
from nexus_memory.identity.handles import shows_other_letters

VICTIM, ATTACKER = "priya.k@example.com", "mallory@evil.example"
WIRE = "Please wire my rent deposit to DE44 5001."


@pytest.mark.parametrize(
    "shown",
    [
        "Priya K\u0430poor",  # a Cyrillic a
        "Pr\u0456ya Kapoor",  # a Cyrillic i
        "\uff30riya Kapoor",  # a full-width P
        "Priya\u200b Kapoor",  # a zero-width space
        "\u202eroopaK ayirP",  # a right-to-left override: shown as 'Priya Kapoor'
        "Priya Kapoor <priya.k@example.com>",  # a whole From line with the victim's address
    ],
)
@pytest.mark.parametrize("victim_first", [True, False])
def test_a_name_that_only_looks_like_a_known_one_does_not_name_its_sender(
    stores: Stores, shown: str, victim_first: bool
) -> None:
    victim = message("gmail", VICTIM, DAY_1 if victim_first else DAY_2, "I adopted a cat.", sender_name="Priya Kapoor")
    attacker = message("gmail", ATTACKER, DAY_2 if victim_first else DAY_1, WIRE, sender_name=shown)
    run(stores, [victim, attacker])

    assert facts_of(stores, ATTACKER) == [f"Please wire {ATTACKER}'s rent deposit to DE44 5001."]
    assert facts_of(stores, VICTIM) == ["Priya Kapoor adopted a cat."]
    names = {r[0] for r in stores.conn.execute("SELECT name FROM entities")}
    assert not any(shows_other_letters(name) or "Priya" in name for name in names - {"Priya Kapoor"}), names
    aliases = {r[0] for r in stores.conn.execute("SELECT alias FROM aliases WHERE alias_type = 'display_name'")}
    assert shown not in aliases
    assert identity.list_candidates(stores.conn, "auto_merged") == []


@pytest.mark.parametrize(
    "name",
    [
        "\u0414\u0430\u043d\u0430",
        "Jos\u00e9 Garc\u00eda",
        "\u7530\u4e2d\u3055\u3093",
        "\u0645\u062d\u0645\u062f",
        "Mohammad\u200cReza",
    ],
)
def test_a_name_in_one_script_still_names_its_sender(stores: Stores, name: str) -> None:
    run(stores, [message("gmail", "friend@example.org", DAY_1, "I adopted a cat.", sender_name=name)])
    assert facts_of(stores, "friend@example.org") == [f"{name} adopted a cat."]


def test_a_from_line_with_the_senders_own_address_still_names_them(stores: Stores) -> None:
    run(stores, [message("gmail", "sam@example.org", DAY_1, "I adopted a cat.", sender_name="Sam <sam@example.org>")])
    assert facts_of(stores, "sam@example.org") == ["Sam <sam@example.org> adopted a cat."]
