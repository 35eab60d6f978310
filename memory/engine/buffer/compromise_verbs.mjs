// Regenerates compromise_verbs.txt: every word (of compromise's own lexicon and of this
// project's texts, one a line on stdin) that later omnia's hydrate would conjugate, i.e. for
// which compromise 14's `nlp(word).verbs().conjugate()[0]` has `Infinitive === word` and a
// PresentTense. Run: node compromise_verbs.mjs < words.txt > compromise_verbs.json
import nlp from "compromise";
import fs from "fs";
const words = fs.readFileSync(0, "utf8").split("\n").filter(Boolean);
const out = {};
for (const w of words) {
  const conj = nlp(w).verbs().conjugate()[0];
  out[w] = conj && conj.Infinitive === w && conj.PresentTense ? conj.PresentTense : null;
}
process.stdout.write(JSON.stringify(out));
