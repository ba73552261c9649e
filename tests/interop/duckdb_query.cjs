// Runs SQL statements in an in-memory DuckDB (npm @duckdb/node-api) and
// prints each statement's rows as one JSON line (an array of row objects;
// big integers as strings). Exits 1 on the first failing statement.
// Usage: node duckdb_query.cjs NODE_MODULES_DIR SQL...
'use strict';
const { createRequire } = require('node:module');

async function main() {
  const [modules, ...statements] = process.argv.slice(2);
  const { DuckDBInstance } = createRequire(modules + '/')('@duckdb/node-api');
  const instance = await DuckDBInstance.create(':memory:', { threads: '2' });
  const connection = await instance.connect();
  for (const sql of statements) {
    const reader = await connection.runAndReadAll(sql);
    process.stdout.write(JSON.stringify(reader.getRowObjectsJson()) + '\n');
  }
}

main().catch((e) => {
  process.stderr.write(`duckdb: ${e.message}\n`);
  process.exit(1);
});
