// Built-in short-answer questions (seed 000's A/B probe), written for the two kinds of shared model before
// any scheme ran: reStructuredText-style completions of CPython documentation facts for a docs model, and
// everyday story completions for a story model. The f16 row of the table says how many the model answers.
import type { ShortQuestion } from './short-answers.js';

const q = (id: string, prompt: string, ...answers: string[]): ShortQuestion => ({ id, prompt, answers });

export const DOC_QUESTIONS: readonly ShortQuestion[] = [
  q('abs', '.. function:: abs(x)\n\n   Return the absolute value of a', 'number'),
  q('len', '.. function:: len(s)\n\n   Return the length (the number of', 'items'),
  q('zerodiv', '.. exception:: ZeroDivisionError\n\n   Raised when the second argument of a division or modulo operation is', 'zero'),
  q('keyerror-keys', '.. exception:: KeyError\n\n   Raised when a mapping (dictionary) key is not found in the set of existing', 'keys'),
  q('chr', '.. function:: chr(i)\n\n   Return the string representing a character whose Unicode code point is the', 'integer'),
  q('isinstance', '.. function:: isinstance(object, classinfo)\n\n   Return ``True`` if the *object* argument is an', 'instance'),
  q('sorted', '.. function:: sorted(iterable, /, *, key=None, reverse=False)\n\n   Return a new sorted', 'list'),
  q('keyerror', 'The :exc:`KeyError` exception is raised when a mapping key is not', 'found'),
  q('print', ".. function:: print(*objects, sep=' ', end='\\n', file=None, flush=False)\n\n   Print *objects* to the text", 'stream'),
  q('hex', '.. function:: hex(x)\n\n   Convert an integer number to a lowercase hexadecimal string prefixed with', '0x'),
  q('ord', '.. function:: ord(c)\n\n   Given a string representing one Unicode character, return an', 'integer'),
  q('min', '.. function:: min(iterable, *, key=None)\n\n   Return the smallest item in an', 'iterable'),
  q('max', '.. function:: max(iterable, *, key=None)\n\n   Return the largest item in an', 'iterable'),
  q('id', '.. function:: id(object)\n\n   Return the "identity" of an', 'object'),
  q('getcwd', '.. function:: os.getcwd()\n\n   Return a string representing the current working', 'directory'),
  q('getpid', '.. function:: os.getpid()\n\n   Return the current process', 'id', 'ID'),
  q('open', 'The :func:`open` function returns a :term:`file', 'object'),
];

export const STORY_QUESTIONS: readonly ShortQuestion[] = [
  q('grass', 'The sky was blue and the grass was', 'green'),
  q('drink', 'Tom was thirsty, so he drank some', 'water', 'milk', 'juice'),
  q('dog', 'The cat said meow and the dog said', 'woof'),
  q('snow', 'The sun was hot and the snow was', 'cold'),
  q('bed', 'Lily went to bed because she was very', 'tired', 'sleepy'),
  q('bird', 'The bird flew up into the', 'sky'),
  q('beach', 'They went to the beach to swim in the', 'sea', 'water', 'ocean'),
  q('hungry', 'She was hungry, so she ate an', 'apple'),
  q('dark', 'It was dark, so Mom turned on the', 'light', 'lights', 'lamp'),
  q('sad', 'Ben was sad and started to', 'cry'),
  q('fish', 'The fish swam in the', 'water', 'pond', 'sea', 'river', 'lake'),
  q('kick', 'The boy kicked the', 'ball'),
  q('dinner', 'After dinner, it was time for', 'bed'),
  q('once', 'Once upon a', 'time'),
  q('smile', 'The little girl was happy and had a big', 'smile'),
  q('shoes', 'He put on his shoes and his', 'hat', 'coat', 'socks'),
];
