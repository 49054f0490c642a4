package sqlite

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hookgate/hookgate/internal/sqlitedb"
	"github.com/hookgate/hookgate/internal/testproc"
)

// earlier is a database at a version before the current one.
type earlier struct {
	name string
	// make brings a new file to the version.
	make func(t *testing.T, db *sqlitedb.DB)
}

// earlierVersions are every schema a file can have before this release: the
// ones that releases before versioned migrations wrote (testdata/shipped,
// dumped from a new file at each commit that changed the schema) and each
// version after them, made by the first steps only.
func earlierVersions(t *testing.T) []earlier {
	t.Helper()
	files, err := filepath.Glob("testdata/shipped/*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("shipped schemas: %v, %v", files, err)
	}
	var out []earlier
	for _, f := range files {
		out = append(out, earlier{name: strings.TrimSuffix(filepath.Base(f), ".sql"), make: func(t *testing.T, db *sqlitedb.DB) {
			sql, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(string(sql)); err != nil {
				t.Fatal(err)
			}
		}})
	}
	for v := 1; v < len(inboxSteps); v++ {
		out = append(out, earlier{name: fmt.Sprintf("version-%d", v), make: func(t *testing.T, db *sqlitedb.DB) {
			ctx := t.Context()
			if err := db.Migrate(ctx, sqlitedb.KeyTable, sqlitedb.KeySteps); err != nil {
				t.Fatal(err)
			}
			if err := db.Migrate(ctx, inboxTables, inboxSteps[:v]); err != nil {
				t.Fatal(err)
			}
		}})
	}
	return out
}

// openFile opens a database file of the test's own.
func openFile(t *testing.T, name string) (*sqlitedb.DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	db, err := sqlitedb.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, path
}

// freshSchema is the schema New gives a new file.
func freshSchema(t *testing.T) []string {
	t.Helper()
	db, _ := openFile(t, "fresh.db")
	if _, err := New(db, Options{}); err != nil {
		t.Fatal(err)
	}
	return schemaOf(t, db.DB)
}

// TestMigrateFromEveryVersion opens a file of every earlier version, with a
// row in each of its tables, and checks that New brings its schema to what
// a new file gets, records the version, keeps every row with the values it
// had, and that opening it again changes nothing.
func TestMigrateFromEveryVersion(t *testing.T) {
	t.Parallel()
	want := freshSchema(t)
	for _, v := range earlierVersions(t) {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			db, _ := openFile(t, "old.db")
			v.make(t, db)
			fillTables(t, db.DB)
			before := tableRows(t, db.DB)
			for range 2 {
				if _, err := New(db, Options{}); err != nil {
					t.Fatalf("New on a file of %s: %v", v.name, err)
				}
				if got := schemaOf(t, db.DB); !slices.Equal(got, want) {
					t.Fatalf("schema after migrating %s differs from a new file's:\n%s", v.name, diffLines(got, want))
				}
				checkVersion(t, db.DB)
				checkRowsKept(t, before, tableRows(t, db.DB))
			}
		})
	}
}

// TestMigrateNewerRefused: a file that a newer hookgate migrated further is
// not opened, rather than used with tables this one does not know.
func TestMigrateNewerRefused(t *testing.T) {
	t.Parallel()
	db, _ := openFile(t, "newer.db")
	if _, err := New(db, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE schema_versions SET version = version + 1 WHERE name = ?`, inboxTables); err != nil {
		t.Fatal(err)
	}
	if _, err := New(db, Options{}); err == nil || !strings.Contains(err.Error(), sqlitedb.ErrNewerSchema.Error()) {
		t.Fatalf("New on a newer file: %v, want ErrNewerSchema", err)
	}
}

const migrators = 4

// TestMigrateAcrossProcesses opens a file of every earlier version from
// several processes at once, as nodes started together do: each opens it
// without error, and the file ends with the schema of a new one, its rows
// kept.
func TestMigrateAcrossProcesses(t *testing.T) {
	if c, ok := testproc.AsChild(t); ok {
		c.Ready(t)
		s, err := Open(c.Arg, Options{})
		if err != nil {
			c.Report(t, err.Error())
			return
		}
		s.Close()
		c.Report(t, "")
		return
	}
	t.Parallel()
	want := freshSchema(t)
	for _, v := range earlierVersions(t) {
		path := filepath.Join(t.TempDir(), v.name+".db")
		db, err := sqlitedb.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		v.make(t, db)
		fillTables(t, db.DB)
		before := tableRows(t, db.DB)
		db.Close()
		for i, r := range testproc.Run(t, migrators, path) {
			var failed string
			if err := json.Unmarshal(r, &failed); err != nil || failed != "" {
				t.Errorf("%s: process %d: %s %v", v.name, i, failed, err)
			}
		}
		db, err = sqlitedb.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := schemaOf(t, db.DB); !slices.Equal(got, want) {
			t.Errorf("schema after migrating %s differs from a new file's:\n%s", v.name, diffLines(got, want))
		}
		checkVersion(t, db.DB)
		checkRowsKept(t, before, tableRows(t, db.DB))
		db.Close()
	}
}

// fillTables writes one row into every table, each column given a value of
// its declared type.
func fillTables(t *testing.T, db *sql.DB) {
	t.Helper()
	for _, table := range tableNames(t, db) {
		cols := columnsOf(t, db, table)
		names := make([]string, len(cols))
		args := make([]any, len(cols))
		for i, c := range cols {
			names[i] = c.name
			switch c.typ {
			case "INTEGER":
				args[i] = 1
			case "BLOB":
				args[i] = []byte("0123456789abcdef")
			default:
				args[i] = "v-" + c.name
			}
		}
		q := "INSERT OR IGNORE INTO " + table + " (" + strings.Join(names, ", ") + ") VALUES (" + placeholders(len(cols)) + ")"
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatalf("fill %s: %v", table, err)
		}
	}
}

// tableRows returns every row of every table, as column name to value, by
// table.
func tableRows(t *testing.T, db *sql.DB) map[string][]map[string]string {
	t.Helper()
	out := map[string][]map[string]string{}
	for _, table := range tableNames(t, db) {
		rows, err := db.Query("SELECT * FROM " + table)
		if err != nil {
			t.Fatal(err)
		}
		names, err := rows.Columns()
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			vals := make([]any, len(names))
			ptrs := make([]any, len(names))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			row := map[string]string{}
			for i, n := range names {
				row[n] = fmt.Sprintf("%v", vals[i])
			}
			out[table] = append(out[table], row)
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// checkRowsKept fails unless every row of before is still in after, with
// the values its columns had.
func checkRowsKept(t *testing.T, before, after map[string][]map[string]string) {
	t.Helper()
	for table, rows := range before {
		if table == "schema_versions" {
			continue
		}
		for _, old := range rows {
			if !slices.ContainsFunc(after[table], func(now map[string]string) bool {
				for col, v := range old {
					if now[col] != v {
						return false
					}
				}
				return true
			}) {
				t.Errorf("%s: row %v lost by the migration; the table holds %v", table, old, after[table])
			}
		}
	}
}

// checkVersion fails unless the file records every inbox and key step.
func checkVersion(t *testing.T, db *sql.DB) {
	t.Helper()
	for name, want := range map[string]int{inboxTables: len(inboxSteps), sqlitedb.KeyTable: len(sqlitedb.KeySteps)} {
		var v int
		if err := db.QueryRow(`SELECT version FROM schema_versions WHERE name = ?`, name).Scan(&v); err != nil || v != want {
			t.Errorf("%s at version %d (%v), want %d", name, v, err, want)
		}
	}
}

type column struct{ name, typ string }

func tableNames(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query(`SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	return names
}

func columnsOf(t *testing.T, db *sql.DB, table string) []column {
	t.Helper()
	rows, err := db.Query(`SELECT name, type FROM pragma_table_info(?)`, table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var cols []column
	for rows.Next() {
		var c column
		if err := rows.Scan(&c.name, &c.typ); err != nil {
			t.Fatal(err)
		}
		cols = append(cols, c)
	}
	return cols
}

var space = regexp.MustCompile(`\s+`)

// schemaOf describes the schema of db, one line per table (its options and
// its columns by name, whatever order ALTER TABLE added them in), index and
// trigger, sorted.
func schemaOf(t *testing.T, db *sql.DB) []string {
	t.Helper()
	var out []string
	for _, table := range tableNames(t, db) {
		var wr, strict int
		if err := db.QueryRow(`SELECT wr, strict FROM pragma_table_list WHERE name = ?`, table).Scan(&wr, &strict); err != nil {
			t.Fatal(err)
		}
		rows, err := db.Query(`SELECT name, type, "notnull", coalesce(dflt_value, ''), pk FROM pragma_table_info(?) ORDER BY name`, table)
		if err != nil {
			t.Fatal(err)
		}
		var cols []string
		for rows.Next() {
			var name, typ, dflt string
			var notnull, pk int
			if err := rows.Scan(&name, &typ, &notnull, &dflt, &pk); err != nil {
				t.Fatal(err)
			}
			cols = append(cols, fmt.Sprintf("%s %s notnull=%d default=%s pk=%d", name, typ, notnull, dflt, pk))
		}
		rows.Close()
		out = append(out, fmt.Sprintf("table %s without_rowid=%d strict=%d: %s", table, wr, strict, strings.Join(cols, ", ")))
	}
	rows, err := db.Query(`SELECT type, name, sql FROM sqlite_schema WHERE type IN ('index', 'trigger') AND sql IS NOT NULL`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var typ, name, def string
		if err := rows.Scan(&typ, &name, &def); err != nil {
			t.Fatal(err)
		}
		def = strings.ReplaceAll(space.ReplaceAllString(def, " "), "IF NOT EXISTS ", "")
		out = append(out, typ+" "+name+": "+def)
	}
	slices.Sort(out)
	return out
}

// diffLines shows the lines only one of got and want has.
func diffLines(got, want []string) string {
	var b strings.Builder
	for _, l := range got {
		if !slices.Contains(want, l) {
			fmt.Fprintf(&b, "- only migrated: %s\n", l)
		}
	}
	for _, l := range want {
		if !slices.Contains(got, l) {
			fmt.Fprintf(&b, "+ only new: %s\n", l)
		}
	}
	return b.String()
}
