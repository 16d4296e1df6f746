// Story openings for the lab's text prompts: TinyStories-style first lines (the shared models are children's
// story models) that the model continues with its own greedy text. Two disjoint sets, as seed 002 insists:
// the probe and any other calibration read `calibration`; every evaluation reads `heldout`.
// Each opening stops mid-sentence so the model's continuation is a story, not an end-of-story token.

// doc-heldout / doc-calibration: reStructuredText openings in the style of the CPython documentation, for
// pydoc-6.8m (trained on those sources): story openings would be out of its distribution.
export type StorySet = 'heldout' | 'calibration' | 'doc-heldout' | 'doc-calibration';
export const STORY_SETS: readonly StorySet[] = ['heldout', 'calibration', 'doc-heldout', 'doc-calibration'];
/** The calibration set paired with each evaluation set (seed 002: the probe never reads the evaluation set). */
export const CALIBRATION_OF: Readonly<Record<StorySet, StorySet>> = {
  heldout: 'calibration',
  calibration: 'calibration',
  'doc-heldout': 'doc-calibration',
  'doc-calibration': 'doc-calibration',
};

export const storyOpenings: Readonly<Record<StorySet, readonly string[]>> = {
  heldout: [
    'Once upon a time, there was a little boy named Tim. He liked to',
    'One sunny day, a small cat went to the park to',
    'Lily and her mom went to the store to buy',
    'There was a big red truck in the town. Every day it',
    'Once upon a time, in a small house, there lived an old man who',
    'Sara had a new toy. It was a shiny ball that',
    'Ben wanted to build a tall tower with his blocks. He',
    'One day, a little bird fell out of its nest. The bird',
    'Tom and Sue were playing in the garden when they found',
    'Once upon a time, there was a happy dog named Max. Max loved to',
    'It was a cold winter day. Anna put on her warm coat and',
    'A little fish lived in a big blue sea. Every morning, the fish',
    'Jack had a red kite. One windy day, he took it to the hill and',
    'Mom made a big cake for the party. Lucy wanted to',
    'Once upon a time, a brave little mouse lived under the stairs. One night, the mouse',
    'The sun was hot, and the children wanted to swim. They ran to the lake and',
  ],
  calibration: [
    'Once upon a time, there was a girl who loved to sing. Every day she',
    'A big brown bear woke up from his long sleep. He was very hungry, so he',
    'Sam found a small box under his bed. When he opened it, he saw',
    'One rainy day, Mia and her brother stayed inside and',
    'There was a little car that could talk. One day, the car said to',
    'Once upon a time, a farmer had a cow, a pig and a duck. One morning, the duck',
    'Emma wanted to help her dad in the kitchen. She took a spoon and',
    'A small green frog sat on a leaf in the pond. He looked up and saw',
  ],
  'doc-heldout': [
    'The :mod:`os` module provides',
    'This module implements a number of functions that',
    ':func:`open` returns a :term:`file object` whose type depends on',
    'The :class:`dict` type is a mapping that',
    '.. function:: sorted(iterable, /, *, key=None, reverse=False)\n\n   Return a new sorted list from',
    'The :keyword:`with` statement is used to',
    'The :mod:`json` module exposes an API familiar to users of',
    '.. class:: Path(*pathsegments)\n\n   A subclass of',
    'Exceptions should be derived from the :exc:`Exception` class',
    'The :mod:`itertools` module standardizes a core set of',
    'When a generator function is called, it returns',
    'The :mod:`logging` module defines functions and classes which',
    '.. method:: str.split(sep=None, maxsplit=-1)\n\n   Return a list of',
    'The :mod:`socket` module provides access to',
    'A :term:`coroutine` is declared with',
    'The :mod:`unittest` unit testing framework was originally inspired by',
  ],
  'doc-calibration': [
    'The :mod:`re` module provides regular expression matching operations',
    'The :mod:`threading` module constructs higher-level threading interfaces on top of',
    '.. function:: len(s)\n\n   Return the length',
    'The :mod:`collections` module implements specialized container datatypes',
    'The :mod:`sys` module provides access to some variables used',
    '.. class:: deque([iterable[, maxlen]])\n\n   Returns a new deque object',
    'The :mod:`subprocess` module allows you to',
    'Decorators are functions that',
  ],
};
