package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"
)

// readConfig reads a YAML config file of settings, one a key, and returns them by flag name.
// A key is the flag's name (node-id), the same with _ (node_id) or its environment
// variable (SUNDIAL_NODE_ID), so settings move between flags, environment and file unchanged.
// A key no flag of the command has is bad input, as an unknown flag is.
func readConfig(path string, fs *pflag.FlagSet, overrides map[string]string) (map[string]string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, usageErrorf("--config: %v", err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, usageErrorf("--config %s: %v", path, err)
	}
	byKey := map[string]string{}
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Name == "config" {
			return
		}
		byKey[f.Name] = f.Name
		byKey[strings.ReplaceAll(f.Name, "-", "_")] = f.Name
		byKey[envName(f.Name, overrides)] = f.Name
	})
	out := map[string]string{}
	for k, v := range doc {
		name, ok := byKey[k]
		if !ok {
			name, ok = byKey[strings.ToLower(k)]
		}
		if !ok {
			return nil, usageErrorf("--config %s: unknown setting %q (the settings are the command's flags)", path, k)
		}
		switch v := v.(type) {
		case string:
			out[name] = v
		case bool:
			out[name] = strconv.FormatBool(v)
		case float64: // YAML numbers come through JSON
			out[name] = strconv.FormatFloat(v, 'f', -1, 64)
		default:
			return nil, usageErrorf("--config %s: %s: want a single value, got %s", path, k, strings.TrimSpace(fmt.Sprint(v)))
		}
	}
	return out, nil
}
