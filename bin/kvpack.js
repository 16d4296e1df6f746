#!/usr/bin/env node
// The kvpack CLI: compiled sources live in dist/ (built by `npm install`).
import { main } from '../dist/src/cli/main.js';
main(process.argv.slice(2));
