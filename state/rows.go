package state

import (
	"context"
	"database/sql"
	"fmt"
)

// rowScanner is a query's row or rows, for the scan functions one row's and many rows' reads share.
type rowScanner interface{ Scan(...any) error }

// eachRow runs query on q and hands each row to scan; what names the read in its errors ("list tasks: …").
func eachRow(ctx context.Context, q queryer, what string, scan func(*sql.Rows) error, query string, args ...any) error {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// allRows is eachRow collecting each row's value, in the query's order.
func allRows[T any](ctx context.Context, q queryer, what string, scan func(rowScanner) (T, error), query string, args ...any) ([]T, error) {
	var out []T
	err := eachRow(ctx, q, what, func(rows *sql.Rows) error {
		v, err := scan(rows)
		out = append(out, v)
		return err
	}, query, args...)
	if err != nil {
		return nil, err
	}
	return out, nil
}
