package config

import (
	"fmt"
	"os"
)

// databaseFields are the settings the database commands read; LoadDatabase
// checks only these.
var databaseFields = []string{"database", "retention"}

// LoadDatabase reads the configuration file at path for the commands that
// only work on the database (events, dead, stats, replay, sweep). The file
// is decoded as strictly as [Load] decodes it (unknown keys are errors),
// and the database and retention are checked, but no secret is read and
// no source is checked: an operator looking at events needs the database,
// not every sender's secret in the environment. Secrets stay unresolved
// ([Secret.Value] is empty); the result must not be served.
func LoadDatabase(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	cfg, _, err := decodeYAML(data)
	if err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	var errs []*FieldError
	for _, e := range cfg.check() {
		for _, f := range databaseFields {
			if e.Field == f {
				errs = append(errs, e)
			}
		}
	}
	if err := joinFieldErrors(errs, nil); err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, nil
}
