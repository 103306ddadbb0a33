package sqlitestore

import (
	"database/sql"
	"strings"
	"time"
)

// millis is the column form of a timestamp.
func millis(t time.Time) int64 { return t.UnixMilli() }

// nullMillis is the column form of an optional timestamp.
func nullMillis(t *time.Time) sql.NullInt64 {
	if t == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixMilli(), Valid: true}
}

// fromMillis is the timestamp a column holds, in UTC.
func fromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// fromNullMillis is the optional timestamp a column holds, in UTC.
func fromNullMillis(ms sql.NullInt64) *time.Time {
	if !ms.Valid {
		return nil
	}
	t := fromMillis(ms.Int64)
	return &t
}

// msUTC is t as the store keeps it: UTC, whole milliseconds.
func msUTC(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC().Truncate(time.Millisecond)
}

// msUTCPtr is msUTC for an optional timestamp; it returns a new pointer.
func msUTCPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := msUTC(*t)
	return &v
}

// where collects the conditions and arguments of a query.
type where struct {
	conds []string
	args  []any
}

// add appends a condition with its arguments.
func (w *where) add(cond string, args ...any) {
	w.conds = append(w.conds, cond)
	w.args = append(w.args, args...)
}

// sql renders " WHERE a AND b", or "" without conditions.
func (w *where) sql() string {
	if len(w.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(w.conds, " AND ")
}

// placeholders returns "?, ?, ?" for n arguments.
func placeholders(n int) string {
	if n == 0 {
		return ""
	}
	return strings.Repeat("?, ", n-1) + "?"
}

// pageLimit bounds a page size to 1..500, defaulting to 50.
func pageLimit(n int) int {
	switch {
	case n <= 0:
		return 50
	case n > 500:
		return 500
	}
	return n
}

// rowScanner is a *sql.Row or *sql.Rows.
type rowScanner interface {
	Scan(dest ...any) error
}
