package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/agentnas/nas/adapter"
)

// def is one object: a table or a named query.
type def struct {
	key   string
	table pgx.Identifier // a table, or nil
	query string         // a query, when table is nil
}

// defs are the objects of the flags, in key order: a table NAME is
// NAME.EXT, SCHEMA.NAME is SCHEMA/NAME.EXT; a query NAME=SQL is NAME.EXT
// (NAME may hold "/").
func defs(tables, queries []string, format string) ([]def, error) {
	ext := "." + format
	var ds []def
	for _, t := range tables {
		id := pgx.Identifier(strings.SplitN(t, ".", 2))
		if slices.Contains(id, "") {
			return nil, fmt.Errorf("--table %q: an empty name", t)
		}
		ds = append(ds, def{key: strings.Join(id, "/") + ext, table: id})
	}
	for _, q := range queries {
		name, sql, ok := strings.Cut(q, "=")
		sql = strings.TrimRight(strings.TrimSpace(sql), "; \t\r\n")
		if !ok || name == "" || sql == "" {
			return nil, fmt.Errorf("--query %q: not NAME=SQL", q)
		}
		ds = append(ds, def{key: name + ext, query: sql})
	}
	slices.SortFunc(ds, func(a, b def) int { return strings.Compare(a.key, b.key) })
	for i, d := range ds {
		if err := adapter.CheckKey(d.key); err != nil {
			return nil, err
		}
		if i > 0 && ds[i-1].key == d.key {
			return nil, fmt.Errorf("two objects named %q", d.key)
		}
	}
	return ds, nil
}

// contentType is the content type of format.
func contentType(format string) string {
	if format == "jsonl" {
		return "application/x-ndjson"
	}
	return "text/csv"
}
