"""The rule-based extractor: explicit originality claims and their negations, sentence by sentence.

A sentence is a signal only when the reviewer states a judgement about originality:
- positive: the work is new / novel / original / the first / not done before;
- negative: the contribution is incremental / derivative / known / similar to prior work / not novel.
Deliberately not signals (each has its own decision label, so tests and audits can see why):
- `question`: sentences ending in '?';
- `hedged`: the reviewer says they cannot judge the novelty;
- `citation-complaint`: missing citations / related work, with no conclusion of non-novelty;
- `presentation-complaint`: the novelty is not clearly explained or highlighted;
- `no-originality-claim`: everything else — praise of quality or clarity, descriptions of
  what the method does, weak-results critiques that do not conclude non-novelty.
Negative rules are tried first, so 'not novel' never counts as a claim of novelty.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["RuleDecision", "classify_sentence", "RULES_VERSION", "EXCLUDED_LABELS"]

RULES_VERSION = "rules-1"
EXCLUDED_LABELS = ("question", "hedged", "citation-complaint", "presentation-complaint", "no-originality-claim")

_NOV = r"(?:novelty|originality|innovation|innovativeness|novel(?:ty)?|new(?:ness)?|original)"
_CONTRIB = r"(?:(?:technical|methodological|conceptual|theoretical|algorithmic|scientific|core|main|overall|research)\s+)?(?:contributions?|novelty|originality|innovations?|innovativeness)"
_SMALL = r"(?:limited|little|low|minor|marginal|modest|incremental|insufficient|questionable|thin|slim|restricted|unclear|weak|small|lacking|minimal|moderate|somewhat limited|rather limited|very limited|quite limited)"
# Words after "novel" that make it a domain term ("novel views", "novel classes"), not a judgement.
_DOMAIN = (
    r"views?|view synthesis|class(?:es)?|categor(?:y|ies)|objects?|environments?|domains?|scenes?|poses?|"
    r"tasks?|situations?|inputs?|examples?|samples?|entities|molecules?|compounds?|proteins?|materials?|"
    r"words?|concepts? (?:at test|unseen)|instances?|users?|items?|queries|prompts?|data(?:sets?)?(?=\s*(?:[.,;:)]|$))"
)

_QUESTION = re.compile(r"\?\s*[\"'”’)\]]*\s*$")
_HEDGE = [
    re.compile(
        r"\b(?:can(?:not|'t|\s+not)|could(?:n't| not)|unable to|not (?:able|qualified|in a position|confident enough) to|"
        r"hard (?:for me )?to|difficult (?:for me )?to|not sure (?:i can|how to|whether i can)|not familiar enough (?:with [^.]{0,60} )?to)\s+"
        r"(?:fully\s+|properly\s+|really\s+)?(?:judge|assess|evaluate|comment on|verify|determine|gauge)\b[^.]{0,60}\b"
        r"(?:novelty|originality|new|novel|contribution)",
        re.I,
    ),
    re.compile(r"\b(?:i am|i'm) not (?:an expert|familiar)[^.]{0,80}\b(?:novelty|originality|novel)", re.I),
    re.compile(r"\b(?:leave|defer)[^.]{0,40}\b(?:novelty|originality)[^.]{0,40}\bto (?:other|the other|fellow) reviewers", re.I),
]
_CITATION = re.compile(
    r"\b(?:should (?:also )?cite|(?:does|do|did) not cite|fails? to cite|not cited|uncited|should (?:also )?(?:discuss|mention|compare (?:to|with)) (?:the )?(?:related|prior|previous|existing|relevant)"
    r"|should (?:also )?(?:discuss|mention|compare (?:to|with))\s+\[)"
    r"|\b(?:missing|miss(?:es)?|lacks?|omit(?:s|ted)?|overlook(?:s|ed)?|(?:does|do) not (?:discuss|mention)|fails? to (?:discuss|mention))\b[^.]{0,60}"
    r"\b(?:citations?|references?|related works?|prior works?|literature|discussion of)\b"
    r"|\b(?:citations?|references?|related works?)\b[^.]{0,60}\b(?:is|are) (?:missing|lacking|incomplete|insufficient)",
    re.I,
)
_PRESENTATION = re.compile(
    r"\b(?:novelty|originality|contributions?)\b[^.]{0,60}\b(?:not|n't|insufficiently|poorly)\s+(?:clearly\s+|well\s+|sufficiently\s+)?"
    r"(?:explained|presented|stated|articulated|highlighted|described|emphasi[sz]ed|motivated|discussed|clarified|positioned)"
    r"|\b(?:clarify|highlight|emphasi[sz]e|articulate|explain|better position|make clear|state)\b[^.]{0,30}\b(?:the|its|their)\s+"
    r"(?:main\s+|key\s+|core\s+)?(?:novelty|originality|contributions?)",
    re.I,
)

_NEGATIVE: list[tuple[str, re.Pattern[str]]] = [
    ("lack-of-novelty", re.compile(
        r"\b(?:lacks?|lacking|lack of|without|absence of|no|devoid of)\s+(?:any\s+|much\s+|real\s+|clear\s+|significant\s+|substantial\s+|sufficient\s+|"
        r"genuine\s+|true\s+|methodological\s+|technical\s+|conceptual\s+|fundamental\s+|major\s+|strong\s+)*"
        r"(?:novelty|originality|innovation|innovativeness|novel (?:ideas?|contributions?|elements?|insights?|methods?|techniques?)|new (?:ideas?|insights?))",
        re.I)),
    ("limited-novelty", re.compile(rf"\b{_SMALL}\s+(?:and\s+\w+\s+)?(?:\w+\s+)?{_CONTRIB}\b", re.I)),
    ("novelty-is-limited", re.compile(
        rf"\b{_CONTRIB}\b[^.;]{{0,60}}?\b(?:is|are|seems?|appears?|remains?|looks?|feels?|was|being)\s+(?:to be\s+)?"
        rf"(?:rather\s+|quite\s+|very\s+|fairly\s+|somewhat\s+|relatively\s+|pretty\s+|too\s+|still\s+|thus\s+|therefore\s+|also\s+)*"
        rf"(?:limited|minor|marginal|incremental|modest|low|thin|weak|slim|questionable|insufficient|lacking|unclear|restricted|minimal|small|"
        rf"not (?:significant|substantial|sufficient|enough|high|strong|clear|obvious|evident|convincing))\b",
        re.I)),
    ("novelty-lacks", re.compile(r"\b(?:novelty|originality|innovation)\b[^.;]{0,30}\b(?:lacks?|is lacking|is questionable|is debatable)\b", re.I)),
    ("not-novel", re.compile(
        r"(?:n't|\b(?:not|hardly|barely|nothing|never))\s+(?:be\s+|been\s+|seem\s+|appear\s+|look\s+|that\s+|very\s+|particularly\s+|sufficiently\s+|"
        r"especially\s+|really\s+|entirely\s+|fundamentally\s+|truly\s+|significantly\s+|substantially\s+|completely\s+|totally\s+|"
        r"quite\s+|so\s+|too\s+|overly\s+|as\s+|a\s+|an\s+|to\s+be\s+|in\s+itself\s+|particularly\s+)*"
        r"(?:novel|new|original|innovative|surprising|groundbreaking)\b(?!\s+to\b)",
        re.I)),
    ("not-novel", re.compile(r"\b(?:nothing|little|not much)\s+(?:really\s+|particularly\s+|fundamentally\s+)?(?:new|novel|original)\b", re.I)),
    ("incremental", re.compile(
        r"(?<![-\w])incremental(?:ly)?\b(?!\s+(?:learning|training|updates?|setting|fashion|manner|decoding|computation|version|steps?|inference|fine-?tuning|impact|improvements?|gains?|performance|benefits?|speed-?ups?))",
        re.I)),
    ("derivative", re.compile(r"\b(?:largely|mostly|rather|quite|very|too|fairly|highly|somewhat)?\s*derivative\b(?![-\s]+(?:free|of|based|estimat|information|works? of))", re.I)),
    ("already-known", re.compile(
        r"\b(?:already|previously|long)\s+(?:been\s+)?(?:known|explored|studied|proposed|established|investigated|"
        r"used|exists?|existed|adopted|discussed|addressed|understood|documented|reported|shown|observed|done)\b"
        r"|(?<!not )(?<!n't )\b(?:widely|extensively|well|commonly)\s+(?:been\s+)?(?:known|explored|studied|established|investigated|understood)\b"
        r"(?!\s+(?:problems?|tasks?|areas?|fields?|topics?|questions?|domains?|settings?|benchmarks?))",
        re.I)),
    ("already-known", re.compile(
        r"\b(?:has|have|had)\s+(?:already\s+)?been\s+(?:\w+\s+)?(?:proposed|explored|studied|done|investigated|considered|introduced|shown)\s+"
        r"(?:before|previously|earlier|in (?:prior|previous|earlier|many|several|numerous|recent|other|the) (?:works?|papers?|literature|studies)|extensively|widely)",
        re.I)),
    ("already-known", re.compile(
        r"(?<!not )(?<!n't )\b(?:was|were|is|are)\s+(?:already\s+)?(?:proposed|introduced|explored|studied|done|shown|presented|published)\s+"
        r"(?:before|previously|earlier|already|in (?:prior|previous|earlier|related) (?:work|works|papers?|literature))",
        re.I)),
    ("already-known", re.compile(r"(?<!not )(?<!n't )\b(?:well|widely)[- ](?:known|established|studied|explored)\b(?!\s+(?:problems?|tasks?|areas?|fields?|topics?|questions?|domains?|settings?|benchmarks?))|\bold (?:idea|concept|trick|technique)\b|\bnot new anymore\b|\bstandard practice\b", re.I)),
    ("similar-to-prior", re.compile(
        r"\b(?:very|quite|highly|largely|essentially|strikingly|rather|too|fairly|extremely|closely|conceptually|methodologically|overly)\s+similar\s+(?:to|with)\b"
        r"|\bsimilar (?:ideas?|approaches|methods|methodologies|techniques|frameworks|works?|strategies|formulations)\s+(?:have|has|already|exist|were|are|can be found)"
        r"|\b(?:essentially|basically|effectively|simply)\s+(?:the same|identical|equivalent|a re-?(?:implementation|naming|branding|packaging))\b"
        r"|\bclosely (?:related|resembles?) (?:to )?(?:prior|previous|existing|earlier)\b"
        r"|\b(?:does|do) not (?:significantly |substantially |fundamentally |really )?differ (?:much )?from (?:prior|previous|existing|earlier)"
        r"|\bmarginally different\b|\bonly (?:marginally|slightly) (?:different|modified)\b",
        re.I)),
    ("combination-of-existing", re.compile(
        r"\b(?:straightforward|simple|mere|trivial|direct|naive|obvious)\s+(?:and \w+ )?(?:extension|combination|application|adaptation|modification|"
        r"variation|variant|generali[sz]ation|integration|re-?use|transfer)\s+of\b"
        r"|\b(?:combination|combines?|combining|integration|assembly|collection|stack(?:ing)?|patchwork)\s+(?:of\s+)?(?:several\s+|multiple\s+|two\s+|a few\s+)?"
        r"(?:existing|well-known|known|standard|established|off-the-shelf|previously proposed|prior)\s+(?:\w+\s+)?(?:techniques|methods|components|modules|ideas|approaches|tools|models|works|tricks)"
        r"|\b(?:only|merely|just|simply)\s+(?:a|an)?\s*(?:minor|small|slight|simple|straightforward|trivial)?\s*(?:modification|variant|variation|extension|tweak|adaptation|application|combination)\s+of\b"
        r"|\bmainly (?:an )?engineering\b|\bprimarily (?:an )?engineering\b|\bengineering (?:effort|exercise|contribution) rather than\b",
        re.I)),
    ("rather-than-new", re.compile(r"\brather than (?:a |an |introducing (?:a |an )?)?(?:fundamentally |truly |genuinely |conceptually |entirely |completely )?(?:new|novel)\b", re.I)),
    ("no-contribution-seen", re.compile(
        r"\b(?:don't|do not|cannot|can't|fail to|failed to)\s+see\s+(?:any|much|the|what|a|enough)?\s*(?:\w+\s+)?(?:novelty|new|contributions?|innovation|difference)", re.I)),
    ("negated-novelty", re.compile(
        r"(?:n't|\b(?:not|no|never|nor|neither|without|lacks?|lacking|lacked|lack of|little|limited|minor|hardly|barely|unclear|questionable|overstated|"
        r"overclaims?|overclaiming|misleading|fails? to|failed to|"
        r"none|nothing|insufficient(?:ly)?|rather than|instead of|difficult to see|hard to see|doubt(?:ful)?|reduc(?:es|ing|ed)|weakens?|"
        r"undermine[sd]?|diminish(?:es|ed)?|absence of|devoid of))\b(?!\s+only\b)(?:\W+\w+){0,6}?\W+"
        r"(?:novel(?:ty)?|original(?:ity)?|innovat\w*|(?:new|fresh) (?:ideas?|insights?|techniques?|contributions?|understanding|mechanisms?|principles?|paradigm)|"
        r"groundbreaking|pioneering|(?:conceptual|significant|major|big|substantial) (?:advance|leap)|unique|fills?(?: \w+)? gaps?|"
        r"(?:new|fresh) (?:\w+ )?(?:methods?|approach(?:es)?|ideas?|insights?|techniques?|perspectives?|paradigms?))\b",
        re.I)),
    ("novelty-undermined", re.compile(
        r"\b(?:novelty|originality|innovation|innovativeness)\b[^.;]{0,80}\b(?:overstated|undermined|questionable|debatable|unconvincing|unjustified|"
        r"not justified|diminished|reduced|limited|minor|marginal|incremental|unclear|lacks|exaggerated|overclaimed)\b",
        re.I)),
    ("novelty-concern", re.compile(
        r"\b(?:limitation|weakness|concern|issue|drawback|shortcoming|problem)s?\b[^.;]{0,40}\b(?:is|are|lies|might be|may be|remains|regards?|"
        r"regarding|about|with|of|concerns?)\b[^.;]{0,20}?\b(?:novelty|originality)\b",
        re.I)),
    ("disputed-claim", re.compile(
        r"\bclaim(?:s|ed)?\b[^.]{0,100}\b(?:first|novel\w*|new)\b[^.]{0,120}\b(?:however|incorrect|not true|overstated|inaccurate|wrong|misleading|"
        r"questionable|confusing|already)\b|\b(?:incorrect|overstated|misleading|inaccurate)\b[^.]{0,40}\bclaims?\b",
        re.I)),
    ("standard-techniques", re.compile(
        r"\b(?:relies|rely|relying|adapts?|adapting|uses|leverages|built|builds|based|consists?)\s+(?:\w+\s+){0,2}?(?:on\s+|of\s+)?(?:\w+\s+)?"
        r"(?:standard|known|established|existing|well-known|common|off-the-shelf|textbook)\s+(?:\w+\s+)?(?:tools?|techniques?|methods?|principles?|components?|alternatives?|arguments?|recipes?)\b"
        r"|\b(?:is|are)\s+(?:a\s+|an\s+)?(?:relatively\s+|fairly\s+|quite\s+|rather\s+)?(?:standard|established|common|well-known|textbook)\s+"
        r"(?:tools?|techniques?|approach(?:es)?|methods?|principles?|practices?|algorithms?|ideas?)\b|\bestablished principles\b|\btextbook (?:algorithm|method|technique|result)",
        re.I)),
    ("not-novel-enough", re.compile(r"\b(?:not|in?sufficiently)\s+(?:sufficiently|enough|very|particularly)?\s*(?:novel|original|innovative|new)\s+enough\b|\binsufficiently novel\b", re.I)),
]

_POSITIVE: list[tuple[str, re.Pattern[str]]] = [
    ("novel", re.compile(rf"\bnovel(?:ty)?\b(?!\s+(?:{_DOMAIN})\b)", re.I)),
    ("original", re.compile(
        r"\boriginality\b|\b(?:is|are|quite|very|highly|truly|genuinely|and|an|both|remains|seems|feels|particularly|sufficiently|conceptually|refreshingly)\s+original\b"
        r"|\boriginal\s+(?:and|idea|ideas|approach|contribution|contributions|perspective|insight|insights|framing|formulation|take|angle|direction|design)\b",
        re.I)),
    ("innovative", re.compile(r"\binnovat(?:ive|ion|ions|iveness)\b", re.I)),
    ("first", re.compile(
        r"^\W*first\s+(?:\w+\s+){0,2}?(?:method|work|study|paper|approach|framework|benchmark|dataset|system|attempt|analysis|algorithm|to)\b|"
        r"\bfor the first time\b|\bfirst[- ]of[- ]its[- ]kind\b|\b(?:the|is|are|a)\s+(?:very\s+)?first\s+(?!(?:part|stage|step|half|section|paragraph|author|experiment|term|layer|row|column|figure|table|round|phase|line|sentence|chapter|component|contribution|claim|issue|point|concern|question|limitation|weakness|strength|few|two|three|set|place)\b)(?:\w+\s+){0,3}?"
        r"(?:to|work|works|study|studies|paper|attempt|approach|method|benchmark|framework|system|application|dataset|one|"
        r"algorithm|analysis|demonstration|effort|formulation|investigation|exploration|result|results|evidence|systematic|comprehensive|large-scale)\b",
        re.I)),
    ("pioneering", re.compile(r"\bpioneer(?:ing|s|ed)?\b|\bgroundbreaking\b|\bunprecedented\b|\btrailblazing\b", re.I)),
    ("fresh", re.compile(r"\bfresh\s+(?:\w+\s+){0,3}?(?:contribution|way|perspective|idea|look|take|angle|approach|view|direction|insight|framing)\b|\brefreshing(?:ly)?\b", re.I)),
    ("new-idea", re.compile(
        r"\b(?:genuinely|truly|entirely|completely|fundamentally|conceptually|substantively)\s+new\b"
        r"|\bnew\s+(?:and\s+\w+\s+)?(?:idea|ideas|perspective|perspectives|paradigm|direction|research direction|angle|insight|insights|"
        r"way of thinking|formulation|problem|problem setting|task|line of research|lens|viewpoint|framing)\b"
        r"|\bnew (?:\w+\s+)?(?:metric|benchmark|dataset|task|strategy|framework|approach|method|technique|paradigm|architecture|algorithm|formulation)\b(?=[^.]{0,80}\b(?:that|which)\s+(?:overcomes|addresses|fills|enables))",
        re.I)),
    ("new-artifact", re.compile(
        r"\b(?:a|an|offers?|provides?|introduces?|proposes?|presents?)\s+(?:\w+\s+){0,2}?(?:new|newly (?:introduced|proposed))\s+(?:and\s+[\w-]+\s+)?(?:[\w-]+\s+){0,2}?"
        r"(?:approach|method|framework|metric|benchmark|dataset|strategy|formulation|task|setting|form|way|technique|architecture|"
        r"algorithm|pipeline|characteri[sz]ation|analysis|theory|result|bound|guarantee|modality|view|concept|class|family|notion)\b"
        r"|\bnewly (?:introduced|proposed)\b|\bnew\s+(?:\w+\s+)?(?:method|approach|framework|strategy|metric|benchmark|dataset)\s+(?:is|are)\s+(?:proposed|introduced)\b",
        re.I)),
    ("fills-gap", re.compile(
        r"\bfill(?:s|ing|ed)?\s+(?:a|an|the|this)?\s*(?:\w+\s+){0,2}?gap\b|\b(?:critical|real|important|significant|notable|tangible|clear|key|major)\s+gap\b"
        r"|\b(?:conceptual|theoretical|significant|major|clear|substantial)\s+(?:advance|leap|step forward|leap forward)\b|\bleap forward\b"
        r"|\bunique\b|\bnot aware of\b|\bunlike (?:most|traditional|conventional|previous|prior|existing|earlier)\b"
        r"|\b(?:differ(?:s|ing)?|diverg(?:es|ing)|departs?|distinct) from (?:the\s+)?(?:traditional|conventional|previous|prior|existing|earlier|standard)\b"
        r"|\bbeyond (?:the\s+)?(?:previous|prior|existing|earlier)\b|\brare\b",
        re.I)),
    ("not-done-before", re.compile(
        r"\b(?:have|has|had)\s+not\s+(?:yet\s+)?(?:been\s+)?(?:previously\s+|yet\s+)?(?:seen|explored|studied|done|considered|proposed|addressed|investigated)\s+"
        r"(?:before|previously|this|such|in (?:prior|previous|the) (?:work|literature))"
        r"|\b(?:have|has|had)\s+not\s+(?:yet\s+)?been\s+(?:previously\s+)?(?:seen|explored|studied|done|considered|proposed|addressed|investigated)\b"
        r"|\bhave(?:n't| not) seen\b|\bnever been (?:explored|studied|done|considered|proposed|addressed)\b"
        r"|\b(?:under|un|less|rarely)[- ]?(?:explored|studied|investigated|addressed)\b|\boverlooked\b|\bremains? rare\b"
        r"|\bnone of the (?:prior |previous |existing )?works?\b|\bfew (?:existing |prior |previous )?works\b|\bwas not (?:explored|studied|addressed|considered) in (?:previous|prior|earlier) work|\bto (?:the best of )?(?:my|our) knowledge\b"
        r"|\bdiffers? from (?:previous|prior|existing|earlier)\b|\bunlike (?:previous|prior|existing|earlier) (?:work|works|methods|approaches)\b",
        re.I)),
]


_NOT_DONE_BEFORE = dict(_POSITIVE)["not-done-before"]
# "had not been previously explored" contains "previously explored": a not-done-before claim outranks these.
_WEAK_NEGATIVE = {"already-known", "standard-techniques"}


@dataclass(frozen=True)
class RuleDecision:
    """The outcome for one sentence: its polarity (None when not a signal) and the rule or exclusion label."""

    polarity: str | None
    """positive | negative | None"""
    rule: str
    """The rule that fired, or one of EXCLUDED_LABELS."""


def classify_sentence(sentence: str) -> RuleDecision:
    """Decide whether one review sentence is an originality signal, and of which polarity."""
    s = " ".join(sentence.split())
    if _QUESTION.search(s):
        return RuleDecision(None, "question")
    for pat in _HEDGE:
        if pat.search(s):
            return RuleDecision(None, "hedged")
    if _NOT_DONE_BEFORE.search(s) and not any(pat.search(s) for name, pat in _NEGATIVE if name not in _WEAK_NEGATIVE):
        return RuleDecision("positive", "not-done-before")
    for name, pat in _NEGATIVE:
        if pat.search(s):
            return RuleDecision("negative", name)
    if _PRESENTATION.search(s):
        return RuleDecision(None, "presentation-complaint")
    positive = next((name for name, pat in _POSITIVE if pat.search(s)), None)
    if _CITATION.search(s):
        return RuleDecision(None, "citation-complaint")
    if positive:
        return RuleDecision("positive", positive)
    return RuleDecision(None, "no-originality-claim")
