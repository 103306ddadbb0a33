// Command composecheck validates the repository's docker-compose.yml and
// Dockerfile without a Docker engine (none runs on the development and CI
// machines): the compose file is loaded and checked against the Compose
// specification's schema by compose-go, the library Docker Compose itself
// uses, and every Dockerfile a service builds is parsed into build stages
// by BuildKit's own Dockerfile front end, its lint warnings counted as
// errors. It also checks that the paths the compose file mounts exist. The
// file is checked twice: as `docker compose up` runs it (services of no
// profile) and with every profile enabled (`--profile "*"`), so that
// optional services such as the tracing profile's are checked too.
//
// Usage (from the repository root, as `make verify` runs it):
//
//	cd localstack/composecheck && go run . ../../docker-compose.yml
//
// It lives in its own Go module so that compose-go's and BuildKit's
// dependencies stay out of the product's go.mod.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/linter"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: composecheck path/to/docker-compose.yml")
		os.Exit(2)
	}
	if err := check(context.Background(), os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "composecheck:", err)
		os.Exit(1)
	}
}

func check(ctx context.Context, composePath string) error {
	for _, profiles := range [][]string{nil, {"*"}} {
		if err := checkProfiles(ctx, composePath, profiles); err != nil {
			return err
		}
	}
	return nil
}

// checkProfiles checks the project with the given profiles enabled (none:
// only the services without a profile).
func checkProfiles(ctx context.Context, composePath string, profiles []string) error {
	abs, err := filepath.Abs(composePath)
	if err != nil {
		return fmt.Errorf("resolve %s: %w", composePath, err)
	}
	opts, err := cli.NewProjectOptions([]string{abs}, cli.WithName("hooklane"), cli.WithWorkingDirectory(filepath.Dir(abs)),
		cli.WithProfiles(profiles))
	if err != nil {
		return fmt.Errorf("compose options: %w", err)
	}
	project, err := opts.LoadProject(ctx)
	if err != nil {
		return fmt.Errorf("load %s with profiles %v: %w", composePath, profiles, err)
	}
	var errs []error
	for _, name := range project.ServiceNames() {
		svc := project.Services[name]
		for _, v := range svc.Volumes {
			if v.Type == types.VolumeTypeBind {
				if _, err := os.Stat(v.Source); err != nil {
					errs = append(errs, fmt.Errorf("service %s mounts %s: %w", name, v.Source, err))
				}
			}
		}
		if svc.Build == nil {
			continue
		}
		dockerfile := svc.Build.Dockerfile
		if dockerfile == "" {
			dockerfile = "Dockerfile"
		}
		if !filepath.IsAbs(dockerfile) {
			dockerfile = filepath.Join(svc.Build.Context, dockerfile)
		}
		n, err := checkDockerfile(dockerfile)
		if err != nil {
			errs = append(errs, fmt.Errorf("service %s: %w", name, err))
			continue
		}
		fmt.Printf("composecheck: service %s builds %s (%d stages)\n", name, dockerfile, n)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	fmt.Printf("composecheck: %s is valid with profiles %v (%d services: %s)\n", composePath, profiles, len(project.Services),
		strings.Join(project.ServiceNames(), ", "))
	return nil
}

// checkDockerfile parses a Dockerfile into its build stages and returns how
// many there are; lint warnings are errors.
func checkDockerfile(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("open Dockerfile: %w", err)
	}
	defer f.Close()
	res, err := parser.Parse(f)
	if err != nil {
		return 0, fmt.Errorf("parse %s: %w", path, err)
	}
	var warnings []string
	for _, w := range res.Warnings {
		warnings = append(warnings, w.Short)
	}
	lint := linter.New(&linter.Config{Warn: func(rule, _, _, msg string, _ []parser.Range) {
		warnings = append(warnings, rule+": "+msg)
	}})
	stages, _, err := instructions.Parse(res.AST, lint)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	if len(warnings) > 0 {
		return 0, fmt.Errorf("%s: %s", path, strings.Join(warnings, "; "))
	}
	if len(stages) == 0 {
		return 0, fmt.Errorf("%s: no build stage", path)
	}
	return len(stages), nil
}
