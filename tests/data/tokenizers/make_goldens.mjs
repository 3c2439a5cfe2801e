// make_goldens.mjs — writes goldens.json: the ids and decoded text of every text in texts.json
// with each tokenizer here, from Hugging Face's own Rust tokenizers (the npm package `tokenizers`,
// Node bindings of the same code as Python's `tokenizers`) and SentencePiece's spm_encode /
// spm_decode (Debian package `sentencepiece`) for the .model file.
//   cd tests/data/tokenizers && npm install tokenizers@0.23.2 && node make_goldens.mjs
// make_goldens.py regenerates the same file with Python's tokenizers and sentencepiece.
import { createRequire } from 'module';
import { execFileSync } from 'child_process';
import { readFileSync, writeFileSync, mkdtempSync } from 'fs';
import { gunzipSync } from 'zlib';
import { tmpdir } from 'os';
import { join } from 'path';

const require = createRequire(import.meta.url);
const { Tokenizer } = require('tokenizers');
const texts = JSON.parse(readFileSync('texts.json', 'utf8'));
const out = { generator: 'make_goldens.mjs (npm tokenizers 0.23.2; spm_encode 0.1.97)', tokenizers: {} };

// variants.json: the shipped files with other normalizer/pre-tokenizer/decoder steps or added-token
// flags, to cover the parts the shipped files do not use (Metaspace, lstrip/rstrip).
const variants = JSON.parse(readFileSync('variants.json', 'utf8'));
const names = ['qwen2.5', 'lenml-llama2', 'gpt2', ...Object.keys(variants)];
for (const name of names) {
  const variant = variants[name];
  const base = variant ? variant.base : name;
  const json = JSON.parse(gunzipSync(readFileSync(`${base}/tokenizer.json.gz`)).toString('utf8'));
  for (const [key, value] of Object.entries(variant?.replace ?? {})) json[key] = value;
  for (const added of json.added_tokens ?? []) Object.assign(added, variant?.added_flags?.[added.content] ?? {});
  const dir = mkdtempSync(join(tmpdir(), 'tok-'));
  const file = join(dir, 'tokenizer.json');
  writeFileSync(file, JSON.stringify(json));
  const tok = await Tokenizer.fromFile(file);
  const cases = [];
  for (const text of texts) {
    const plain = await tok.encode(text, null, { addSpecialTokens: false });
    const special = await tok.encode(text, null, { addSpecialTokens: true });
    const ids = plain.getIds(), idsSpecial = special.getIds();
    cases.push({
      text, ids, tokens: plain.getTokens(), ids_special: idsSpecial,
      decoded: await tok.decode(ids, true),
      decoded_special: await tok.decode(idsSpecial, false),
    });
  }
  out.tokenizers[name] = variant ? { path: `${base}/tokenizer.json.gz`, variant: name, cases }
                                 : { path: `${name}/tokenizer.json.gz`, cases };
}

// SentencePiece's command-line tools read lines, so texts with line breaks are left out here.
const model = 'sp-tiny/tokenizer.model';
const cases = [];
for (const text of texts) {
  if (/[\r\n]/.test(text)) continue;
  const run = (tool, args, input) => execFileSync(tool, [`--model=${model}`, ...args], { input }).toString();
  const ids = run('spm_encode', ['--output_format=id'], text + '\n').trim().split(/\s+/).filter(s => s).map(Number);
  const decoded = ids.length ? run('spm_decode', ['--input_format=id'], ids.join(' ') + '\n').replace(/\n$/, '') : '';
  cases.push({ text, ids, ids_special: [1, ...ids], decoded });
}
out.tokenizers['sp-tiny'] = { path: model, cases };
writeFileSync('goldens.json', JSON.stringify(out, null, 0).replace(/\},\{"text"/g, '},\n{"text"') + '\n');
