// Counts the bench/search filter's matches with DuckDB's read_json over the
// archive's .json.gz objects. Usage: node duckdb_count.mjs DIR THREADS TENANT NEEDLE
import { DuckDBInstance } from '@duckdb/node-api';

const [dir, threads, tenant, needle] = process.argv.slice(2);
const db = await DuckDBInstance.create(':memory:', { threads: String(threads) });
const con = await db.connect();
const sql = `SELECT count(*) AS n FROM read_json('${dir}/**/*.json.gz', format = 'newline_delimited')
             WHERE message_attributes.tenant.StringValue = $tenant AND contains(body, $needle)`;
const reader = await con.runAndReadAll(sql, { tenant, needle });
console.log(String(reader.getRows()[0][0]));
