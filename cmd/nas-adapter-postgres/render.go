package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/agentnas/nas/adapter"
)

// render renders ds in one REPEATABLE READ READ ONLY transaction (one
// snapshot of the database) into the cache and returns their objects; a
// table that does not exist is left out (and logged). Any failure to
// reach the database or run a query fails the whole (CodeUnavailable).
func (s *server) render(ctx context.Context, ds []def) ([]adapter.Object, error) {
	conn, err := pgx.ConnectConfig(ctx, s.cfg)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	// A scan that joins another one mid-table would give the rows in
	// another order, and so another version of the same data.
	if _, err := tx.Exec(ctx, "SET LOCAL synchronize_seqscans = off"); err != nil {
		return nil, fmt.Errorf("set synchronize_seqscans: %w", err)
	}
	var snap string
	if err := tx.QueryRow(ctx, "SELECT pg_current_snapshot()::text").Scan(&snap); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	var objs []adapter.Object
	var paths []string
	for _, d := range ds {
		src, ok, err := sourceOf(ctx, tx, d)
		if err != nil {
			return nil, err
		}
		if !ok {
			s.log.Warn("table skipped: it does not exist", "key", d.key, "table", d.table.Sanitize())
			continue
		}
		o, err := s.cache.write(func(w io.Writer) error { return s.dump(ctx, tx, src, w) })
		if err != nil {
			return nil, fmt.Errorf("render %s: %w", d.key, err)
		}
		o.Key, o.ContentType = d.key, contentType(s.format)
		objs = append(objs, o)
		paths = append(paths, o.Version)
	}
	s.log.Info("rendered", "objects", len(objs), "snapshot", snap)
	s.cache.trim(paths)
	return objs, nil
}

// source is what the rows of an object are read from: a query, or a
// table ordered by its primary key when it has one (else in its physical
// order, which changes only when its rows do).
type source struct {
	from  string // a table name, or a query in parentheses
	order string // ORDER BY columns of a table, or ""
}

// sourceOf is the source of d; false when d is a table that does not
// exist.
func sourceOf(ctx context.Context, tx pgx.Tx, d def) (source, bool, error) {
	if d.table == nil {
		return source{from: "(" + d.query + ")"}, true, nil
	}
	name := d.table.Sanitize()
	var exists bool
	if err := tx.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", name).Scan(&exists); err != nil {
		return source{}, false, fmt.Errorf("look up %s: %w", name, err)
	}
	if !exists {
		return source{}, false, nil
	}
	rows, err := tx.Query(ctx, `SELECT a.attname FROM pg_index i
		JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
		WHERE i.indrelid = $1::regclass AND i.indisprimary
		ORDER BY array_position(i.indkey::int2[], a.attnum)`, name)
	if err != nil {
		return source{}, false, fmt.Errorf("primary key of %s: %w", name, err)
	}
	cols, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return source{}, false, fmt.Errorf("primary key of %s: %w", name, err)
	}
	for i, c := range cols {
		cols[i] = "r." + pgx.Identifier{c}.Sanitize()
	}
	return source{from: name, order: strings.Join(cols, ", ")}, true, nil
}

// selectOf is a SELECT of what (columns of r) from src, in its order.
func (src source) selectOf(what string) string {
	sql := "SELECT " + what + " FROM " + src.from + " AS r"
	if src.order != "" {
		sql += " ORDER BY " + src.order
	}
	return sql
}

// dump writes the rows of src to w in the format: CSV with a header row
// by COPY, or one row_to_json line per row.
func (s *server) dump(ctx context.Context, tx pgx.Tx, src source, w io.Writer) error {
	if s.format == "csv" {
		_, err := tx.Conn().PgConn().CopyTo(ctx, w, "COPY ("+src.selectOf("r.*")+") TO STDOUT WITH (FORMAT csv, HEADER)")
		return err
	}
	rows, err := tx.Query(ctx, src.selectOf("row_to_json(r)::text"))
	if err != nil {
		return err
	}
	defer rows.Close()
	bw := bufio.NewWriterSize(w, 64<<10)
	for rows.Next() {
		bw.Write(rows.RawValues()[0])
		if err := bw.WriteByte('\n'); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return bw.Flush()
}
