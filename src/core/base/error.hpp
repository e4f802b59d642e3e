// m2g core: error types. Every error carries a sentence a user can act on:
// what was wrong, where (file:line or option), and what is accepted.
#pragma once

#include <stdexcept>
#include <string>

namespace m2g {

// Base of every error the core throws. Adapters catch this (and
// std::exception) at the Slurm boundary; nothing crosses into Slurm.
class Error : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// Malformed input text: a config line, a hostlist expression, an option.
class ParseError : public Error {
  public:
    using Error::Error;
};

// Input that parses but does not describe a consistent cluster.
class ValidationError : public Error {
  public:
    using Error::Error;
};

// What the user named (a job, a recipe) does not exist where it was looked
// for. The m2g command exits 4 for it (m2g(1), EXIT STATUS).
class NotFoundError : public Error {
  public:
    using Error::Error;
};

// A service m2g reads (slurmctld, slurmdbd) cannot be reached or refuses the
// request, or the Slurm configuration that names it is missing. The m2g
// command exits 5 for it.
class UnreachableError : public Error {
  public:
    using Error::Error;
};

}  // namespace m2g
