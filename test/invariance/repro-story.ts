// The issue-20 reproduction's prompts: a story as a user would send it, over 128 tokens (the default -ub)
// in both shared models' tokenizers.
export const STORY_TEXT =
  'Once upon a time, there was a little girl named Lily. She lived in a small house with her mom and dad. ' +
  'Lily loved to play outside in the sun. One day, she saw a big red ball in the park. She ran to the ball and ' +
  'picked it up. "This is my ball now," she said. A boy named Ben came running. "That is my ball!" he said. ' +
  'Lily did not want to give the ball back. She held it tight and frowned. Ben was sad and started to cry. ' +
  'Lily looked at Ben and felt bad. She remembered what her mom told her: "Sharing is caring." So Lily gave ' +
  'the ball to Ben. Ben smiled and said, "Thank you, Lily! Do you want to play with me?" Lily nodded and they ' +
  'played with the ball together. They kicked it high and ran after it. They laughed and laughed. When the sun ' +
  'went down, their moms called them home. Lily and Ben said goodbye and promised to play again the next day. ' +
  'That night, Lily told her mom about Ben and the ball. Her mom hugged her and said she was proud of her.';

/** 253 tokens on stories260K (512-piece vocabulary), as in the issue. */
export const STORY_260K = STORY_TEXT.slice(0, STORY_TEXT.indexOf('Do you want'));
/** 181 tokens on tinystories-656k (its vocabulary is larger: the whole story). */
export const STORY_656K = STORY_TEXT;
