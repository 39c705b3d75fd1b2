//! Account endpoints: `whoami`, teams, models with clusters and on-demand prices, GPU types.

use crate::client::{PlatformClient, TeamScope};
use crate::error::PlatformError;
use crate::http::{Call, Service};
use crate::wire::account::{
    AvailableModels, GpuTypes, Team, TeamsPage, WhoamiResponse, WhoamiUser,
};

/// Page size `prime switch` uses when it fetches every team.
const TEAMS_PAGE: u32 = 100;
/// Safety bound on the number of team pages followed.
const MAX_TEAM_PAGES: u32 = 100;

impl PlatformClient {
    /// `GET /user/whoami[?teamId=]`: the user behind the key (team from the settings).
    pub async fn whoami(&self) -> Result<WhoamiUser, PlatformError> {
        let call = Call::get(Service::Platform, "/user/whoami".into(), self.timeout())
            .query_opt("teamId", self.active_team_id());
        let answer: WhoamiResponse = self.http.json(call).await?;
        Ok(answer.data)
    }

    /// `GET /user/whoami` once, within `timeout`, never retried: the readiness probe of a
    /// gateway (`/readyz`; its caller polls again, so a retry would only hide the answer).
    pub async fn probe(&self, timeout: std::time::Duration) -> Result<(), PlatformError> {
        let call = Call::new(
            reqwest::Method::GET,
            Service::Platform,
            "/user/whoami".into(),
            timeout,
        )
        .query_opt("teamId", self.active_team_id());
        let _: WhoamiResponse = self.http.json(call).await?;
        Ok(())
    }

    /// `GET /user/teams?offset=&limit=`: one page of the user's teams (no team scoping).
    pub async fn list_teams(&self, offset: u32, limit: u32) -> Result<TeamsPage, PlatformError> {
        let call = Call::get(Service::Platform, "/user/teams".into(), self.timeout())
            .query("offset", offset)
            .query("limit", limit);
        self.http.json(call).await
    }

    /// Every team, paged like `fetch_teams()`: limit 100 at offsets 0, 100, … until the total
    /// is reached or a page comes back empty.
    pub async fn list_all_teams(&self) -> Result<Vec<Team>, PlatformError> {
        let mut teams = Vec::new();
        for page in 0..MAX_TEAM_PAGES {
            let batch = self.list_teams(page * TEAMS_PAGE, TEAMS_PAGE).await?;
            let empty = batch.data.is_empty();
            teams.extend(batch.data);
            let total = batch.total_count.unwrap_or(0) as usize;
            if empty || teams.len() >= total {
                break;
            }
        }
        Ok(teams)
    }

    /// `GET /training/available-fft-models[?team_id=]`: models with their clusters and
    /// on-demand offers. A 404 reads as the empty answer, as in the CLI.
    pub async fn available_models(
        &self,
        scope: &TeamScope,
    ) -> Result<AvailableModels, PlatformError> {
        let call = Call::get(
            Service::Platform,
            "/training/available-fft-models".into(),
            self.timeout(),
        )
        .query_opt("team_id", self.team_for(scope));
        match self.http.json(call).await {
            Err(PlatformError::NotFound { .. }) => Ok(AvailableModels::default()),
            other => other,
        }
    }

    /// `GET /training/available-gpu-types[?team_id=]`.
    pub async fn gpu_types(&self, scope: &TeamScope) -> Result<GpuTypes, PlatformError> {
        let call = Call::get(
            Service::Platform,
            "/training/available-gpu-types".into(),
            self.timeout(),
        )
        .query_opt("team_id", self.team_for(scope));
        self.http.json(call).await
    }

    /// The ordinary request timeout.
    pub(crate) fn timeout(&self) -> std::time::Duration {
        self.http.settings.timeouts.request
    }
}
