"""Word lists of the extractor's heuristics: stopwords, fillers, verbs, name and place cues."""

from __future__ import annotations

import re

from nexus_memory.core import words as core_words
from nexus_memory.core.words import word_set

# Tokens for word-level heuristics (keeps contractions and possessives together).
WORD_RE = re.compile(r"[A-Za-z0-9]+(?:['\u2019][A-Za-z]+)*")


# Words that end a sentence with a period without ending the sentence.
ABBREVIATIONS = frozenset(
    {
        "mr",
        "mrs",
        "ms",
        "dr",
        "st",
        "jr",
        "sr",
        "prof",
        "vs",
        "etc",
        "e.g",
        "i.e",
        "inc",
        "co",
        "ltd",
        "no",
        "approx",
        "dept",
        "mt",
        "ave",
        "u.s",
        "a.m",
        "p.m",
    }
)

# Function words, for the chatter test and the "said" prefix decision: the one list with its contractions whole
# (WORD_RE keeps "don't" whole, so the halves d, ll, m, re, s, t, ve are left out) and the verbs of chat; not
# "now", which says when ("now I work at Acme"; as a stopword it changes the facts of LoCoMo's turns).
STOPWORDS = (core_words.STOPWORDS - {"d", "ll", "m", "now", "re", "s", "t", "ve"}) | word_set("""
also cannot get gets getting gonna got ought really wanna
aren't can't couldn't didn't doesn't don't hadn't hasn't haven't he'd he'll he's here's how's i'd i'll i'm
i've isn't it's let's mustn't shan't she'd she'll she's shouldn't that's there's they'd they'll they're
they've wasn't we'd we'll we're we've weren't what's when's where's who's why's won't wouldn't you'd
you'll you're you've
""")

# Words that make a sentence chatter when nothing else is in it ("That's really cool, thanks!").
FILLER_WORDS = word_set("""
hey hi hiya hello oh ooh wow whoa yeah yea yep yup yes no nope nah ok okay well haha hahaha hah hehe lol
aww aw ah ahh omg hmm um thanks thank cheers congrats congratulations sure totally absolutely definitely
exactly indeed right true agreed man dude wait awesome great cool nice amazing wonderful sweet gosh ugh
yay woo hooray alright bye goodbye goodnight good glad happy fun lovely fantastic incredible super
sounds sound looks look seems seem like love loved much lot lots thing things stuff kind sorry
see hear heard talk soon later care luck welcome pleasure problem worries too same also always
awesome beautiful cute gorgeous stunning brilliant perfect interesting exciting excited cool neat
nice fab fabulous wow hope hoping guess think mean know yeah ya yo pretty quite such tho though
woohoo hoo
""")

# Capitalised words that are not names when they appear mid-sentence (and "Asked", which opens a kept answer:
# 'Asked "What ...?", Mel answered: ...', read by the LLM writer's validation with the sentence's first word).
NOT_NAMES = word_set("""
I I'm I've I'll I'd OK Ok Okay Hey Hi Hello Oh Wow Yes No Yeah Yep Thanks Thank The A An This That These
Those It Its He She We They You Your My Our Their His Her Me Him Us Them Mom Mum Dad Mother Father
Grandma Grandpa Sis Bro Lol Haha Omg Btw Sorry Please Congrats Congratulations Cheers Mr Mrs Ms Dr
Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March April May June July
August September October November December Christmas Easter Halloween Thanksgiving Today Tomorrow
Asked Yesterday Tonight God Mon Tue Tues Wed Thu Thurs Fri Sat Sun Jan Feb Mar Apr Jun Jul Aug Sep Sept Oct Nov Dec
""")

# Words that cannot follow "I'm" as a name ("I'm Happy", "I'm Sorry", "I'm Going") and nationalities.
INTRO_NOT_NAMES = word_set("""
happy sorry going glad fine good great okay ok not so just back here there really also still sure excited
tired busy new done ready home sad thankful grateful proud lucky curious nervous scared afraid worried
hungry bored free available in on at from with about always never currently now trying thinking working
looking feeling doing getting having making taking living staying planning hoping learning reading
watching writing playing starting pretty very totally definitely actually literally kinda kind sort
american canadian british english french german italian spanish mexican chinese japanese korean indian
irish scottish australian russian brazilian jewish christian muslim catholic buddhist hindu atheist
gay straight trans bi vegan vegetarian single married divorced the a an it that this your my his her our
their all both afraid sure well sick late early first last glad thrilled stoked blessed honored
""")

# Nationality, language and faith words: capitalised, but neither people nor places.
NATIONALITIES = word_set("""
American Canadian British English French German Italian Spanish Mexican Chinese Japanese Korean Indian Irish
Scottish Australian Russian Brazilian Jewish Christian Muslim Catholic Buddhist Hindu Dutch Swedish Greek
Portuguese Polish Turkish Arabic Latin African European Asian Latino Latina Hispanic Thai Vietnamese
""")
# Subject-like words that may start a clause (for compound splits).
SUBJECT_WORDS = word_set("""
i i'm i've i'll i'd we we're we've we'll we'd you you're you've you'll he he's she she's it it's they
they're they've that that's this there there's here my our your his her their the a an these those
everyone everything someone something nobody nothing people
""")

# Words that open a question ("What ...", "Did you ...", "Can I ..."): such a sentence states nothing.
QUESTION_OPENERS = word_set(
    "what how why where when who whom whose which do does did is are was were can could "
    "would will should shall have has had any anything anyone am isn't aren't don't "
    "didn't doesn't won't"
)
# The words of a question that opens with its wh-word or its inverted auxiliary ("how was it", "did you").
WH_WORDS = word_set("what how why where when who whom whose which")
INVERTED_AUXILIARIES = word_set(
    "do does did is are was were can could would will should shall have has am isn't aren't don't didn't doesn't"
)
# Connectives a question may open with before its inversion: "So has Nate been ...", "And do you ...".
QUESTION_LEADS = word_set("so and but ok okay well oh then")
# Words of a yes/no question that asks for a thing: a reply that names one answers it ("Any favorite movies?").
ANY_WORDS = word_set("any favorite favourite favorites favourites")
# A tag a statement may end in without a comma before it: "That's a japanese game series right?".
QUESTION_TAGS = word_set("right huh yeah eh no ok okay alright")
# Words that open a noun phrase: after "What book is" they start the subject ("... is your sister reading").
DETERMINERS = word_set("the a an my your his her their our its these those")
# Who an inverted auxiliary asks about: "did you ...", "is it ...", "can we ...".
QUESTION_SUBJECTS = word_set("i you we they he she it this that there anyone anybody someone everyone u ya")
# Verbs that open a request when nothing comes before them: "send me details", "book it", "call ahead".
IMPERATIVE_VERBS = word_set("""
add ask backfill be book bring buy call check come count create cut drop email enjoy fill find follow forward
give grab help join keep leave let log look make meet mention offer order partition pick ping point put read
record remember remind reply save see send share show split start stop take tell text try update use wait
""")
# Praise that says how the speaker feels, not what someone is like ("You're the best", "You rock"); traits
# ("brave", "creative") describe a person and are left out.
PRAISE_WORDS = word_set("""
great awesome amazing incredible inspiring inspirational impressive proud best rock rocks cool wonderful
fantastic motivating motivational brilliant lovely perfect nice good stunning
""")
# First-person singular words: a sentence with one says something about its speaker.
FIRST_PERSON = word_set("i i'm i've i'll i'd me my mine myself")
# Second-person words: a sentence with one speaks about the one spoken to.
SECOND_PERSON = word_set("you you're you've you'll you'd your yours yourself")
# Words that say when: with one, a request or a proposal carries a plan ("Let's meet tomorrow").
WHEN_WORDS = word_set("""
today tonight tomorrow yesterday morning afternoon evening noon midnight weekend week month year
monday tuesday wednesday thursday friday saturday sunday january february march april may june july august
september october november december
""")
# Personal pronouns that are always subjects: the word after one is taken as a verb.
SUBJECT_PRONOUNS = word_set("i we you they he she")
# Auxiliary and very common verbs (in any person) that mark a clause.
AUX_VERBS = word_set("""
am is are was were be been being has have had do does did will would can could should shall may might
must 'm 's 're 've 'll 'd gonna wanna can't won't don't doesn't didn't isn't aren't wasn't weren't
haven't hasn't hadn't couldn't wouldn't shouldn't got get gets go goes went gone make makes made take
takes took feel feels felt think thinks thought know knows knew love loves want wants need needs like
likes see saw seen say said says try tries tried help helps keep keeps kept give gives gave find found
finds start starts started come comes came
""")

# Irregular past tenses (no -ed to spot them by).
IRREGULAR_PAST = word_set("""
bought brought caught taught thought fought sought ran began swam sang rang drank drove rode wrote spoke broke
chose froze woke wore tore bore threw grew knew flew drew blew ate fell held told sold sent spent lent built
left felt kept slept swept meant met led fed fled read heard paid laid said stood understood won lost shot
hid bit lit sat sprang stuck struck hung dug spun became forgot forgave went got did made took saw came gave
found had was were began sank shook stole rose drew beat bent bled dealt dreamt fit lay slid spat split wept
learnt burnt spelt leapt retook
""")
# Base-form verbs that take an -s when the subject becomes a third-person name ("I love" -> "Ann loves").
PRESENT_VERBS = word_set("""
love like want need think feel hope know work live plan enjoy prefer hate go take make get have do
try say see believe wish miss remember find keep play teach study run write read paint cook bake sing
dance practice travel visit spend use own agree mean look seem guess appreciate understand care
volunteer help start love adore dislike struggle deal focus promise swear bet recommend suggest
pay matter happen grow change bring show give build move sound turn last win lose fit belong depend
really definitely totally believe admire support collect create draw hike swim ride drive watch listen
""")
# Sentence-initial verbs that mean the speaker dropped the subject ("Went hiking", "Love that idea").
SUBJECT_DROP_VERBS = word_set("""
had got went did made tried found started finished took saw met joined bought visited watched read wrote
learned learnt spent adopted painted signed moved picked baked cooked ran won lost taught gave built
love loved hope wish need want appreciate think guess miss plan can't cannot couldn't gotta just recently
""")
# Sentence-initial adjectives of a dropped "I'm" ("Excited to start", "So glad you came").
SUBJECT_DROP_ADJECTIVES = word_set(
    "excited thrilled glad happy proud stoked sorry grateful thankful lucky blessed nervous worried curious busy tired"
)
# Words after I/you that must not take an -s: present-and-past forms and colloquial auxiliaries.
NO_AGREEMENT = word_set(
    "read put set let hit cut quit hurt cost spread shut kinda sorta gonna wanna gotta "
    "ought used might must may shall should could would can will sooner rather "
    "yesterday today tomorrow"
)
# Adverbs that may sit between the subject and its verb ("I really love").
ADVERBS = word_set(
    "really also just still always usually often never definitely totally actually "
    "sometimes truly absolutely even already"
)
# Finite verbs that follow one named subject ("Kestrel is", "Priya will"), not a plural one ("Pets have").
SINGULAR_FINITE = word_set("""
is was has does did will can could would should may might must isn't wasn't hasn't doesn't didn't won't can't
couldn't wouldn't says
""")
# A third-person form for the few irregular verbs after a resolved subject.
THIRD_PERSON = {
    "am": "is",
    "are": "is",
    "were": "was",
    "have": "has",
    "do": "does",
    "don't": "doesn't",
    "haven't": "hasn't",
    "aren't": "isn't",
    "weren't": "wasn't",
    "go": "goes",
    "'m": "is",
}
# Contractions after I/you rewritten for a named subject.
CONTRACTIONS = {"'m": " is", "'re": " is", "'ve": " has", "'ll": " will", "'d": " would", "'s": " is"}

# Entity type cues: organization suffixes and words.
ORG_WORDS = word_set("""
Inc Inc. Corp Corp. Corporation LLC Ltd Ltd. Company Co Co. Group Holdings University College School
Institute Foundation Bank Hospital Clinic Church Club Association Society Center Centre Agency Studio
Studios Labs Lab Academy Team Council Committee Department Ministry Museum Library Gallery Records
Press Media Network Systems Technologies Tech Partners Capital Ventures Airlines Store Shop Cafe Restaurant
Bakery Gym Theater Theatre Festival Conference League Union Party
""")
# Location suffixes and words.
LOCATION_WORDS = word_set("""
Street St St. Avenue Ave Road Rd Boulevard Blvd Lane Drive Way City Town Village County State Province
Park Lake River Mountain Mountains Mount Mt Beach Island Islands Bay Valley Canyon Falls Forest Desert
Coast Hills Hill Harbor Harbour Square Bridge Airport Station Trail Peninsula Ocean Sea Gulf Creek Point Gate
""")
# A small gazetteer of places people name in chat.
PLACES = word_set("""
Paris London Rome Berlin Madrid Tokyo Kyoto Seoul Beijing Shanghai Sydney Melbourne Toronto Vancouver
Montreal Chicago Boston Seattle Portland Denver Austin Dallas Houston Miami Atlanta Phoenix Vegas
Brooklyn Manhattan Hollywood Nashville Orlando Philadelphia Detroit Minneapolis Amsterdam Barcelona
Lisbon Dublin Prague Vienna Athens Istanbul Dubai Mumbai Delhi Bangkok Bali Singapore Mexico Canada
France Germany Italy Spain Japan China India Brazil Australia England Ireland Scotland Sweden Norway
Greece Portugal Thailand Vietnam Korea Egypt Kenya Peru Chile Argentina Iceland Hawaii Alaska
California Texas Florida Colorado Oregon Washington Arizona Utah Nevada Michigan Ohio Georgia Virginia
Carolina Tennessee Montana Maine Vermont Europe Asia Africa America NYC LA SF UK USA US
New York Los Angeles San Francisco San Diego New Orleans New Jersey Las Vegas
""")
# Prepositions after which a single capitalised word is most likely a place.
LOCATION_PREPOSITIONS = frozenset({"in", "from", "near", "to", "visited", "visiting", "around", "across"})
# Words before a capitalised word that mark it as a person.
PERSON_CUES = word_set("""
friend friends sister brother mom dad mother father son daughter wife husband partner boyfriend
girlfriend cousin aunt uncle niece nephew grandma grandpa colleague coworker boss neighbor neighbour
named called met told asked mentor coach teacher buddy pal roommate
""")

# Kin words: people a pronoun can point back to without a name ("my sister ... she").
KIN_WORDS = word_set("""
mom mum mother dad father sister brother wife husband son daughter grandma grandpa grandmother grandfather
aunt uncle cousin niece nephew boss girlfriend boyfriend fiancee fiance
""")

# Messages that are ephemeral chatter as a whole (after lower-casing and stripping punctuation).
CHATTER = word_set("""
ok okay k kk lol lmao rofl haha hahaha hehe brb gtg ttyl thx ty thanks yes no yep nope yeah sure cool
nice great hmm hm ugh yay wow omg np ya yo hi hey hello bye
""")
# The words of asking after someone ("How's everything going?", "How have you been?", "What's up?"): a question of
# only these (and names) is small talk, which no reply answers with a fact.
SMALL_TALK_WORDS = word_set("""
how how's what's is are has have been it going everything things doing about you your life up new
""")
# What a "look at this ..." shows when it shows a picture, not a thing ("this pic of ...").
PICTURE_WORDS = word_set("pic pics picture pictures photo photos one out thing stuff")
