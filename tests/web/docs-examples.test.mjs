// The examples of README.md's "Use the library" and "Embed the planner" and
// of the npm package's README (wasm/npm/README.md) are the very files that
// .ci/consumers and tests/web/npm-package.test.mjs build and run: each code
// block after a marker `<!-- file: PATH -->` must be PATH's text, byte for
// byte, and the documents must show the consumers' files.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { repo } from '../wasm/load-module.mjs';

/** The {file, block} pairs of a Markdown document's `<!-- file: PATH -->` markers. */
function shownFiles(doc) {
  const text = readFileSync(path.join(repo, doc), 'utf8');
  const shown = [];
  for (const match of text.matchAll(/<!-- file: (\S+) -->\n```[a-z]*\n([\s\S]*?)^```$/gm)) {
    shown.push({ file: match[1], block: match[2] });
  }
  // A marker without its code block right after it is a mistake too.
  const markers = [...text.matchAll(/<!-- file: /g)].length;
  assert.equal(shown.length, markers, `${doc}: a <!-- file: --> marker not followed by a code block`);
  return shown;
}

const docs = ['README.md', 'wasm/npm/README.md',
  ...readdirSync(path.join(repo, 'core/docs')).filter((f) => f.endsWith('.md')).map((f) => `core/docs/${f}`)];

test('docs: every code block marked with a file is that file of the repository', () => {
  let checked = 0;
  for (const doc of docs) {
    for (const { file, block } of shownFiles(doc)) {
      assert.equal(block, readFileSync(path.join(repo, file), 'utf8'), `${doc} shows ${file} other than it is`);
      checked++;
    }
  }
  assert.ok(checked >= 7, `only ${checked} blocks checked`);
});

test('docs: README.md shows the library\'s consumers and the page of the npm package, its README the page', () => {
  const readme = shownFiles('README.md').map((s) => s.file);
  for (const file of ['tests/consumers/cmake/CMakeLists.txt', 'tests/consumers/cmake/main.cpp',
    'tests/consumers/subproject/CMakeLists.txt', 'tests/consumers/fetchcontent/CMakeLists.txt',
    'tests/consumers/npm-page/index.html', 'tests/consumers/npm-page/main.js'])
    assert.ok(readme.includes(file), `README.md does not show ${file}`);
  const npmReadme = shownFiles('wasm/npm/README.md').map((s) => s.file);
  for (const file of ['tests/consumers/npm-page/index.html', 'tests/consumers/npm-page/main.js'])
    assert.ok(npmReadme.includes(file), `wasm/npm/README.md does not show ${file}`);
});
